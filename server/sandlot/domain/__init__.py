"""Pure domain logic: errors, status machines, path rules, keys. No I/O lives here."""
