"""The main window and what it owns: layout, docks built late, presentation mode, status bar, menus, actions, history, tour and the side-by-side stack."""
