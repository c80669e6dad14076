"""The foundation every app stands on: the abstract base model, the audit log, named advisory
locks, domain errors, strict environment readers, after-commit task dispatch, API base classes
(exception handler, audited writes, throttling, validators, strict filters and page numbers,
strict JSON input types, the OpenAPI schema's error answers) and the audit filterset. Imports
Django, DRF, django-filter and drf-spectacular only, never an app of the console.
"""
