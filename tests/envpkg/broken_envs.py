"""An env package whose import fails, for the --env-package error test."""

raise RuntimeError("broken on purpose: this package needs a licence key\nsecond line never shown")
