"""Usage and cost: the Usage page, CSV export and quotas."""
