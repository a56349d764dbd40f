from enum import StrEnum

class ResumeOutHow(StrEnum):
    HYDRATED = "hydrated"
    REATTACHED = "reattached"

    def __str__(self) -> str:
        return str(self.value)
