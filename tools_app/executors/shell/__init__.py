"""Shell: run command lines in the sandbox, after ``policy`` has checked every program in them."""
