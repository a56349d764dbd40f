from enum import StrEnum

class EnvironmentOutIdleAction(StrEnum):
    END = "end"
    SUSPEND = "suspend"

    def __str__(self) -> str:
        return str(self.value)
