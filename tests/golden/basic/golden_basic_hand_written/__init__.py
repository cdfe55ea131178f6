"""Hand-written pieces of the golden `Golden` backend (what a real backend writes by hand)."""
