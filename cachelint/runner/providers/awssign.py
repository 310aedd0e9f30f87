"""Signing a recording's call to Amazon Bedrock with the AWS credentials of the machine.

A Bedrock target records with a Bedrock API key (a bearer token) when `api-key-env` holds one.
Without one, a call to Bedrock's routes (`SIGNED_BY_AWS`) is signed with SigV4 instead, with the
credentials botocore finds as every AWS SDK does (the environment, a profile, SSO, an
instance or task role), for the region in the target's url
(`https://bedrock-runtime.REGION.amazonaws.com`) or, for another host, the configured one
(`AWS_REGION`, else botocore's `AWS_DEFAULT_REGION` or profile).
botocore comes with boto3, which a team on Bedrock has; it is imported only here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from cachelint.errors import CachelintError

SERVICE = "bedrock"
_REGION_HOST = re.compile(r"bedrock-runtime(?:-fips)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com")


def signed(url: str, host: str, payload: bytes, headers: Mapping[str, str]) -> dict[str, str]:
    """`headers` with the SigV4 headers of a POST of `payload` to `url` added."""
    try:
        import botocore.session
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
    except ImportError:
        raise CachelintError(
            "recording Bedrock with no Bedrock API key in the target's api-key-env signs with "
            "your AWS credentials, which needs botocore: pip install boto3"
        ) from None
    session = botocore.session.get_session()
    credentials = session.get_credentials()
    if credentials is None:
        raise CachelintError(
            "recording Bedrock needs a Bedrock API key in the target's api-key-env, or AWS "
            "credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, SSO or a role)"
        )
    match = _REGION_HOST.fullmatch(host)
    # AWS_REGION is the variable the AWS SDKs share; botocore's own is AWS_DEFAULT_REGION.
    region = (
        match["region"]
        if match is not None
        else os.environ.get("AWS_REGION") or session.get_config_variable("region")
    )
    if not region:
        raise CachelintError(
            f"recording Bedrock at {host}: set AWS_REGION, or use the url "
            "https://bedrock-runtime.REGION.amazonaws.com"
        )
    request = AWSRequest(method="POST", url=url, data=payload, headers=dict(headers))
    SigV4Auth(credentials.get_frozen_credentials(), SERVICE, region).add_auth(request)
    return dict(request.headers.items())
