"""Features and their activities: the base class, the built-ins and the registry."""
