"""Write-side services of the scheduling app (verb-first functions, one transaction each)."""
