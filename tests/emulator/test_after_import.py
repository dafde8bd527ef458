"""Batch and CloudFormation are patched when moto loads them, not at the server's start (~230 MB of moto)."""

import subprocess
import sys
import textwrap

from mlscale_emulator import after_import


def test_a_patch_runs_once_right_after_its_module_is_imported(tmp_path, monkeypatch):
    (tmp_path / "mlscale_late_module.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    calls = []

    def patch():
        import mlscale_late_module

        calls.append(mlscale_late_module.VALUE)
        mlscale_late_module.VALUE = 2

    after_import.when_imported("mlscale_late_module", patch)
    after_import.when_imported("mlscale_late_module", patch)  # a second start registers nothing more
    assert calls == [] and "mlscale_late_module" not in sys.modules
    import mlscale_late_module

    assert calls == [1] and mlscale_late_module.VALUE == 2
    after_import.when_imported("mlscale_late_module", patch)  # already imported: now
    assert calls == [1, 2]
    monkeypatch.delitem(sys.modules, "mlscale_late_module")


def test_the_server_loads_moto_batch_and_cloudformation_only_when_used_and_patches_them_then():
    script = textwrap.dedent("""
        import sys
        from mlscale_emulator.server import install_services, shutdown_services
        install_services()
        shutdown_services()
        heavy = ("moto.ec2.models", "moto.batch.models", "moto.cloudformation.models")
        print(sorted(m for m in heavy if m in sys.modules))
        from moto.batch import models as batch
        from moto.cloudformation import models as cloudformation
        from moto.ssm import models as ssm
        print(batch.Job.describe.__module__, cloudformation.Stack.create_resources.__module__,
              ssm.ParameterDict._check_loading_status.__module__)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.splitlines() == [
        "[]",
        "mlscale_emulator.batch.service mlscale_emulator.cloudformation mlscale_emulator.ssm",
    ]
