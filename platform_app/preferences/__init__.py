"""A person's own display preferences (for now the colour theme), kept on the server so they
follow the person to another browser."""
