"""Settings package: ``base`` (every deployment), ``test`` (pytest), ``env`` (strict readers)."""
