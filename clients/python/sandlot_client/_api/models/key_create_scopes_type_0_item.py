from enum import StrEnum

class KeyCreateScopesType0Item(StrEnum):
    METRICSREAD = "metrics:read"
    OPERATOR = "operator"
    SANDBOXESREAD = "sandboxes:read"
    SANDBOXESWRITE = "sandboxes:write"

    def __str__(self) -> str:
        return str(self.value)
