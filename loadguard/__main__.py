"""`python -m loadguard` runs the CLI."""

from loadguard.cli import main

if __name__ == "__main__":
    main()
