from enum import StrEnum

class KeyCreateScopesType0Item(StrEnum):
    OPERATOR = "operator"
    SANDBOXESREAD = "sandboxes:read"
    SANDBOXESWRITE = "sandboxes:write"

    def __str__(self) -> str:
        return str(self.value)
