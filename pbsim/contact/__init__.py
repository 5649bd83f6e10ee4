"""Contact: environment geometry, robot contact points, penetration depth/normal, force models."""
from pbsim.contact.scene import Scene

__all__ = ["Scene"]
