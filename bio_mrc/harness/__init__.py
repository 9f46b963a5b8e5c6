"""bio-mrc compare: a comparison's config -> splits -> models -> cells -> summary -> report."""
