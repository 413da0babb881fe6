"""dynsteer-hook."""
