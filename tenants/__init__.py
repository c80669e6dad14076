"""Who may use what: tenants, members, resource groups and quotas."""
