"""Config layer: TOML files -> validated, frozen pydantic models."""
