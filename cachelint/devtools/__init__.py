"""Development tools shipped with cachelint: the scripted fake provider for demos and tests."""
