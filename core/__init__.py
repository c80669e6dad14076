"""The foundation every app stands on: the abstract base model, the audit log, named advisory
locks, domain errors, strict environment readers, API base classes (exception handler, audited
writes, throttling, validators) and the audit filterset. Imports Django and DRF only, never an
app of the console.
"""
