from mmlat import configdiff, load


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_only_options_that_matter_are_listed_fragment_ones_first(tmp_path):
    run = tmp_path / "run"
    write(run / "kernels/old/config",
          "CONFIG_PREEMPT=y\nCONFIG_HZ_250=y\nCONFIG_SWAP=y\n# CONFIG_LRU_GEN is not set\n"
          "CONFIG_FOO_DRIVER=y\nCONFIG_SAME=y\nCONFIG_FUNCTION_ALIGNMENT=4\n")
    write(run / "kernels/new/config",
          "CONFIG_PREEMPT=y\nCONFIG_HZ_1000=y\nCONFIG_SWAP=y\nCONFIG_LRU_GEN=y\n"
          "CONFIG_BAR_DRIVER=m\nCONFIG_SAME=y\n")
    write(run / "kernels/new/fragments.config", "# CONFIG_LRU_GEN is not set\nCONFIG_SWAP=y\n")
    d = configdiff.run_diff(str(run), ["old", "new"])
    assert [(o["option"], o["values"], o["from_fragment"]) for o in d["options"]] == [
        ("CONFIG_LRU_GEN", ["unset", "y"], True),
        ("CONFIG_HZ_1000", ["unset", "y"], False),
        ("CONFIG_HZ_250", ["y", "unset"], False)]
    # the two drivers and the code alignment differ but do not matter:
    # counted, not listed
    assert d["other_differences"] == 3


def test_same_configs_or_a_missing_one_give_no_diff(tmp_path):
    run = tmp_path / "run"
    write(run / "kernels/a/config", "CONFIG_PREEMPT=y\n")
    write(run / "kernels/b/config", "CONFIG_PREEMPT=y\n")
    assert configdiff.run_diff(str(run), ["a", "b"]) is None
    assert configdiff.run_diff(str(run), ["a", "c"]) is None


def test_a_side_is_named_by_its_variant_its_ref_or_its_spec():
    run = {"cells": [{"variant": "v6.12"}, {"variant": "HEAD-1"}],
           "kernels": {"HEAD-1": {"ref": "HEAD~1"}, "v6.12": {"ref": "v6.12"}}}
    assert load.variant_named(run, "v6.12") == "v6.12"
    assert load.variant_named(run, "HEAD~1") == "HEAD-1"
    assert load.variant_named(run, "mine=path/to/series") == "mine"
    assert load.variant_named(run, None) is None


def test_a_run_across_configs_compares_boots_of_other_configs_and_says_so():
    import pytest
    from mmlat import model, render_text, stats
    a = {"accel": "tcg-icount", "config_sha256": "x"}
    b = {"accel": "tcg-icount", "config_sha256": "y"}
    with pytest.raises(stats.IncompatibleCells):
        stats.check_compatible(a, b, keys=stats.compared_keys({"cross": False}))
    stats.check_compatible(a, b, keys=stats.compared_keys({"cross": True}))
    with pytest.raises(stats.IncompatibleCells):
        stats.check_compatible(a, dict(b, accel="kvm"), keys=stats.compared_keys({"cross": True}))
    lines = render_text.config_diff_lines(model.ConfigDiff(
        variants=["a", "b"], other_differences=7,
        options=[model.ConfigOption("CONFIG_HZ_250", ["y", "unset"], from_fragment=False)]))
    assert lines[0] == "CONFIGS DIFFER (CROSS=yes): 1 options that matter for latency"
    assert lines[1] == "  differ, and 7 others; a / b (* not set by the fragments):"
    assert lines[2].startswith("  *CONFIG_HZ_250") and lines[2].endswith("y / unset")
    assert all(len(line) <= 80 for line in lines)
    assert render_text.config_diff_lines(None) == []
