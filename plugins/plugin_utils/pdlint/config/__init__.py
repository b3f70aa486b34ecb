"""Project configuration: the value, the decisions it makes, and the files it is read from."""
