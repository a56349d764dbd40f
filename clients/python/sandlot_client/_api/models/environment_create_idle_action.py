from enum import StrEnum

class EnvironmentCreateIdleAction(StrEnum):
    END = "end"
    SUSPEND = "suspend"

    def __str__(self) -> str:
        return str(self.value)
