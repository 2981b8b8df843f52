"""Human-readable reports built from run folders."""
