"""Miners turn folders into drawers: project files (`project`) and chat exports (`convos`)."""
