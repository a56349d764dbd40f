from enum import StrEnum

class EnvironmentUpdateIdleActionType1(StrEnum):
    END = "end"
    SUSPEND = "suspend"

    def __str__(self) -> str:
        return str(self.value)
