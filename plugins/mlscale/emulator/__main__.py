"""`python -m mlscale.emulator [serve|up|down|status]`."""

from mlscale.cli import main

if __name__ == "__main__":
    import sys

    main(["emulator", *(sys.argv[1:] or ["serve"])])
