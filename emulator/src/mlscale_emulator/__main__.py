"""`python -m mlscale_emulator [serve|up|down|status]`."""

from mlscale_emulator.cli import main

if __name__ == "__main__":
    import sys

    main(["emulator", *(sys.argv[1:] or ["serve"])])
