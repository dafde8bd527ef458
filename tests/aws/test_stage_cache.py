"""The stage cache's pure parts: fingerprints, placeholders, S3 identities (moto), CacheConfig's rules."""

from __future__ import annotations

from datetime import timedelta

import boto3
import pytest
from moto import mock_aws

from mlscale.aws.stage_cache import fingerprint, s3_identity, with_placeholders
from mlscale.operators.caching import CacheParts, compute
from mlscale.specs import CacheConfig, SpecError


def test_a_fingerprint_depends_on_content_not_on_key_order():
    assert fingerprint("training", "1", {"a": 1, "b": [1, 2]}) == fingerprint("training", "1", {"b": [1, 2], "a": 1})
    assert fingerprint("training", "1", {"a": 1}) != fingerprint("training", "2", {"a": 1})  # the version
    assert fingerprint("training", "1", {"a": 1}) != fingerprint("processing", "1", {"a": 1})  # the stage


def test_placeholders_replace_the_longest_uri_first_and_inside_text():
    names = {"s3://bucket-1/run-1/": "<output:run>", "s3://bucket-1/run-1/shards/": "<input:shards>"}
    request = {"In": "s3://bucket-1/run-1/shards/", "Sql": "UNLOAD (...) TO 's3://bucket-1/run-1/x/'", "N": [3]}
    assert with_placeholders(request, names) == {
        "In": "<input:shards>",
        "Sql": "UNLOAD (...) TO '<output:run>x/'",
        "N": [3],
    }


@mock_aws
def test_an_s3_identity_is_the_objects_under_the_prefix_wherever_the_prefix_is():
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="bucket-1")
    for run in ("run-1", "run-2"):
        s3.put_object(Bucket="bucket-1", Key=f"{run}/a.bin", Body=b"same")
    assert s3_identity(s3, "s3://bucket-1/run-1/") == s3_identity(s3, "s3://bucket-1/run-2/")
    empty = s3_identity(s3, "s3://bucket-1/nothing/")
    s3.put_object(Bucket="bucket-1", Key="run-2/a.bin", Body=b"other")
    assert s3_identity(s3, "s3://bucket-1/run-1/") != s3_identity(s3, "s3://bucket-1/run-2/") != empty
    assert s3_identity(s3, ["s3://bucket-1/run-1/", "s3://bucket-1/nothing/"]) != s3_identity(
        s3, ["s3://bucket-1/nothing/", "s3://bucket-1/run-1/"]
    )


@mock_aws
def test_run_specific_output_prefixes_and_ignored_inputs_leave_the_fingerprint_alone():
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="bucket-1")
    s3.put_object(Bucket="bucket-1", Key="in/a", Body=b"1")
    s3.put_object(Bucket="bucket-1", Key="aux/a", Body=b"1")

    def parts(out: str) -> CacheParts:
        request = {"In": "s3://bucket-1/in/", "Aux": "s3://bucket-1/aux/", "Out": out, "Image": "registry/image:1"}
        return CacheParts(
            request,
            {"data": "s3://bucket-1/in/", "aux": "s3://bucket-1/aux/"},
            {"out": out},
            {"image": "registry/image:1"},
        )

    first, _ = compute("processing", parts("s3://bucket-1/run-1/"), None, s3)
    assert compute("processing", parts("s3://bucket-1/run-2/"), None, s3)[0] == first
    ignoring = CacheConfig(ignored_inputs=["aux", "image"])
    before, identities = compute("processing", parts("s3://bucket-1/run-1/"), ignoring, s3)
    s3.put_object(Bucket="bucket-1", Key="aux/a", Body=b"2")
    assert (
        identities["aux"] == "(ignored)"
        and compute("processing", parts("s3://bucket-1/run-1/"), ignoring, s3)[0] == before
    )
    assert compute("processing", parts("s3://bucket-1/run-1/"), None, s3)[0] != first
    other_image = parts("s3://bucket-1/run-1/")
    other_image.request["Image"] = other_image.extras["image"] = "registry/image:2"
    assert compute("processing", other_image, ignoring, s3)[0] == before  # ignored: in the request too


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("P30D", timedelta(days=30)),
        ("P4W", timedelta(days=28)),
        ("PT12H", timedelta(hours=12)),
        ("P1DT30M", timedelta(days=1, minutes=30)),
        ("None", None),
    ],
)
def test_expire_after_takes_iso_8601_durations(text, expected):
    config = CacheConfig(enabled="true", expire_after=text, location="s3://my-bucket/cache")
    config.validate()
    assert config.enabled is True and config.expiry() == expected


@pytest.mark.parametrize(
    ("config", "field"),
    [
        (CacheConfig(expire_after="30d"), "cache.expire_after"),
        (CacheConfig(expire_after="P0D"), "cache.expire_after"),
        (CacheConfig(enabled="sometimes"), "cache.enabled"),
        (CacheConfig(version=""), "cache.version"),
        (CacheConfig(location="bucket/prefix"), "cache.location"),
        (CacheConfig(ignored_inputs=["train", "tset"]), "cache.ignored_inputs: 'tset' is not one of"),
    ],
)
def test_bad_cache_settings_name_the_field_and_the_rule(config, field):
    with pytest.raises(SpecError, match=field):
        config.validate(("train", "test", "code"))


def test_a_cache_that_is_on_needs_a_location_here_or_in_the_settings(monkeypatch):
    monkeypatch.delenv("AIRFLOW__MLSCALE__CACHE_LOCATION", raising=False)
    with pytest.raises(SpecError, match=r"cache.location: must name where the cache keeps its entries"):
        CacheConfig(enabled=True).validate()
    CacheConfig(enabled=False).validate()  # off: nothing is kept
    CacheConfig(enabled=True, location="s3://my-bucket/cache").validate()
    monkeypatch.setenv("AIRFLOW__MLSCALE__CACHE_LOCATION", "s3://my-bucket/cache")
    CacheConfig(enabled=True).validate()


def test_an_operator_argument_may_be_a_bool_a_dict_or_a_config():
    assert CacheConfig.of(True).enabled is True and CacheConfig.of(None) is None
    assert CacheConfig.of({"enabled": True, "version": "3"}).version == "3"
    with pytest.raises(TypeError, match="cache: must be a CacheConfig"):
        CacheConfig.of(3)
