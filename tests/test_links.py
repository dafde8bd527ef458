"""Extra links: the AWS console on AWS, the emulator's own pages when the connection points at the emulator."""

import urllib.error
import urllib.request

import pytest

from mlscale.links import ALL_LINKS, EndpointLink, GreengrassDeploymentLink, TrainingJobLink, emulator_url


@pytest.mark.parametrize(
    "endpoint",
    [
        None,
        "",
        "https://api.sagemaker.us-east-1.amazonaws.com",
        "https://vpce-0a1b.api.sagemaker.eu-west-1.vpce.amazonaws.com",
        "https://sagemaker.cn-north-1.amazonaws.com.cn",
    ],
)
def test_aws_endpoints_are_not_the_emulator(endpoint):
    assert emulator_url(endpoint) is None


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:5055", "http://127.0.0.1:5055/", "http://emulator:5055"])
def test_other_endpoints_are_the_emulator(endpoint):
    assert emulator_url(endpoint) == endpoint.rstrip("/")


def test_aws_console_link():
    fields = {"region_name": "eu-west-1", "aws_domain": "aws.amazon.com", "emulator_url": None, "job_name": "j-1"}
    assert TrainingJobLink().format_link(**fields) == (
        "https://console.aws.amazon.com/sagemaker/home?region=eu-west-1#/jobs/j-1"
    )


def test_emulator_link_quotes_the_resource():
    fields = {
        "region_name": "us-east-1",
        "aws_domain": "aws.amazon.com",
        "emulator_url": "http://127.0.0.1:5055",
        "deployment_id": "a/b c",
    }
    assert GreengrassDeploymentLink().format_link(**fields) == (
        "http://127.0.0.1:5055/moto-api/mlscale/greengrass-deployments/a%2Fb%20c"
    )
    assert EndpointLink().format_link(**fields) == ""  # a field it needs is missing: no link rather than a wrong one


def test_every_link_has_a_unique_key_and_an_emulator_page():
    from mlscale_emulator.console import PAGES

    assert len({link.key for link in ALL_LINKS}) == len(ALL_LINKS)
    assert {link.emulator_page.split("/")[0] for link in ALL_LINKS} <= set(PAGES)


@pytest.mark.emulator
def test_console_page_for_an_unknown_resource_says_why(emulator):
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(f"{emulator.endpoint_url}/moto-api/mlscale/endpoints/no-such-endpoint")
    assert error.value.code == 404
    assert "no-such-endpoint" in error.value.read().decode()
