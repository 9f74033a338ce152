"""Reusable widgets of K3 Explorer (no dock logic)."""
