from enum import StrEnum

class EnvironmentUpdateIdleActionType3Type1(StrEnum):
    END = "end"
    SUSPEND = "suspend"

    def __str__(self) -> str:
        return str(self.value)
