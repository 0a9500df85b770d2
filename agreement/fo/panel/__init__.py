"""What the App panel shows, computed from run results any SDK user can load."""
