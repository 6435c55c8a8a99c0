"""Doris 3.1+'s `redirect-policy` (LoadAction.selectEndpointByRedirectPolicy), case by case, with
Doris' texts word for word; Guava's HostAndPort parsing it relies on; the endpoint-tag checks;
the group-commit affinity rule (GroupCommitManager) and the FE's 307 Location with forwarding."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from galene.fe.load_routing import (
    INVALID_GROUP_COMMIT,
    GroupCommitAffinity,
    LoadRoutingError,
    group_commit_wanted,
    parse_endpoint,
    redirect_location,
    select_endpoint,
    split_host_port,
)

BE = ("be-host", 8040)
PUB = "203.0.113.7:18040"
PRIV = "10.1.2.3:28040"


def pick(policy, host, public=None, private=None, default=""):
    tags = {}
    if public is not None:
        tags["public_endpoint"] = public
    if private is not None:
        tags["private_endpoint"] = private
    return select_endpoint(policy, default, host, BE[0], BE[1], tags)


def refused(*args, **kw) -> str:
    with pytest.raises(LoadRoutingError) as info:
        pick(*args, **kw)
    return info.value.message


# --- direct / random-be ---------------------------------------------------------------------
@pytest.mark.parametrize("policy", ["direct", "random-be", "DIRECT", "Random-BE"])
def test_direct_and_random_be_go_to_host_and_http_port(policy):
    assert pick(policy, "fe:8030", public=PUB, private=PRIV) == BE


# --- public / private -----------------------------------------------------------------------
def test_public_uses_the_public_endpoint():
    assert pick("public", "fe:8030", public=PUB, private=PRIV) == ("203.0.113.7", 18040)


def test_public_without_one_is_doris_error():
    assert (
        refused("public", "fe:8030", private=PRIV)
        == "public endpoint is null, please check be public endpoint config"
    )


def test_private_uses_the_private_endpoint():
    assert pick("private", "fe:8030", public=PUB, private=PRIV) == ("10.1.2.3", 28040)


def test_private_without_one_is_doris_error():
    assert (
        refused("private", "fe:8030", public=PUB)
        == "private endpoint is null, please check be private endpoint config"
    )


# --- public-private ---------------------------------------------------------------------------
@pytest.mark.parametrize("host", ["10.0.0.5:8030", "172.16.9.9", "172.31.255.1:1", "192.168.1.1:8030"])
def test_public_private_site_local_ip_with_private_goes_private(host):
    assert pick("public-private", host, public=PUB, private=PRIV) == ("10.1.2.3", 28040)


@pytest.mark.parametrize("host", ["10.0.0.5:8030", "192.168.1.1"])
def test_public_private_site_local_ip_without_private_goes_public(host):
    assert pick("public-private", host, public=PUB) == ("203.0.113.7", 18040)


@pytest.mark.parametrize("host", ["8.8.8.8:8030", "172.32.0.1", "127.0.0.1:8030", "[2001:db8::1]:8030"])
def test_public_private_other_ip_goes_public(host):
    assert pick("public-private", host, public=PUB, private=PRIV) == ("203.0.113.7", 18040)


def test_public_private_ip_without_public_is_invalid_host():
    # Only the host part is named (Doris uses reqHost here).
    assert refused("public-private", "8.8.8.8:8030", private=PRIV) == "Invalid header host: 8.8.8.8"
    assert refused("public-private", "10.0.0.5:8030") == "Invalid header host: 10.0.0.5"


def test_public_private_name_containing_public_goes_public():
    assert pick("public-private", "doris-PUBLIC.example.com:8030", public=PUB, private=PRIV) == (
        "203.0.113.7",
        18040,
    )


def test_public_private_other_name_goes_private():
    assert pick("public-private", "fe.internal:8030", public=PUB, private=PRIV) == ("10.1.2.3", 28040)
    # "public" in the name but no public endpoint: private.
    assert pick("public-private", "public.example.com", private=PRIV) == ("10.1.2.3", 28040)


def test_public_private_name_without_private_is_invalid_host():
    assert refused("public-private", "fe.internal:8030", public=PUB) == "Invalid header host: fe.internal"
    assert refused("public-private", "fe.internal") == "Invalid header host: fe.internal"


# --- the default (empty), and any other value --------------------------------------------------
@pytest.mark.parametrize("policy", [None, "", "nonsense"])
def test_default_host_equal_to_public_host_goes_public(policy):
    assert pick(policy, "203.0.113.7:8030", public=PUB, private=PRIV) == ("203.0.113.7", 18040)


@pytest.mark.parametrize("policy", [None, "", "nonsense"])
def test_default_with_private_uses_the_request_host_and_private_port(policy):
    # Doris does this on purpose ("private endpoint may be unknown for cloud mode").
    assert pick(policy, "fe.example.com:8030", public=PUB, private=PRIV) == ("fe.example.com", 28040)
    assert pick(policy, "8.8.8.8:8030", public=PUB, private=PRIV) == ("8.8.8.8", 28040)


def test_default_public_host_match_needs_an_ip_literal():
    # A name equal to the public endpoint's host is not an IP literal: not the public rule.
    assert pick(None, "lb.example.com:8030", public="lb.example.com:18040", private=PRIV) == (
        "lb.example.com",
        28040,
    )
    assert pick(None, "lb.example.com:8030", public="lb.example.com:18040") == BE


@pytest.mark.parametrize("policy", [None, "", "nonsense"])
def test_default_without_private_goes_to_host_and_http_port(policy):
    assert pick(policy, "fe:8030", public=PUB) == BE
    assert pick(policy, "fe:8030") == BE


def test_fe_config_policy_applies_when_the_header_is_absent_or_empty():
    assert pick(None, "fe:8030", public=PUB, default="public") == ("203.0.113.7", 18040)
    assert pick("", "fe:8030", public=PUB, default="public") == ("203.0.113.7", 18040)
    assert pick("direct", "fe:8030", public=PUB, default="public") == BE


# --- the Host header and the endpoint tags -------------------------------------------------------
@pytest.mark.parametrize("host", ["", "   ", None])
def test_empty_host_header(host):
    assert refused("direct", host) == "Invalid header host: "


@pytest.mark.parametrize("host", ["fe:abc", "fe:99999", "fe:-1", "[::1", "[::1]x", "fe:+80"])
def test_unparsable_host_header(host):
    assert refused(None, host) == f"Invalid header host: {host}"


def test_whitespace_in_host_is_removed():
    assert refused(None, " fe : abc ") == "Invalid header host: fe:abc"
    assert pick("public-private", " 10.0.0.1 : 8030", private=PRIV) == ("10.1.2.3", 28040)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("nohost", "Invalid endpoint: nohost"),
        ("h:", "Invalid endpoint: h:"),
        ("h:x1", "Invalid endpoint: h:x1"),
        ("h:70000", "Invalid endpoint: h:70000"),
        ("h:-5", "Invalid endpoint: h:-5"),
        ("h:0", "Invalid endpoint port: 0"),
        ("[::1]:0", "Invalid endpoint port: 0"),
    ],
)
def test_malformed_endpoint_tags(value, message):
    with pytest.raises(LoadRoutingError) as info:
        parse_endpoint(value)
    assert info.value.message == message
    assert refused("direct", "fe:8030", public=value) == message  # Doris parses them first


def test_endpoints_parse_like_guava():
    assert parse_endpoint(" 1.2.3.4 : 80 ") == ("1.2.3.4", 80)
    assert parse_endpoint("[2001:db8::1]:8040") == ("2001:db8::1", 8040)
    assert split_host_port("2001:db8::1") == ("2001:db8::1", None)
    assert split_host_port("fe:") == ("fe", None)
    assert split_host_port("[::1]") == ("::1", None)
    assert pick("private", "fe", private="[fd00::1]:8040") == ("fd00::1", 8040)


# --- group commit: the header, the table property, the owner rule -----------------------------
def test_group_commit_header_values():
    assert group_commit_wanted("async_mode", {}) and group_commit_wanted("SYNC_MODE", {})
    assert not group_commit_wanted("off_mode", {"group_commit_mode": "async_mode"})
    assert group_commit_wanted(None, {"group_commit_mode": "async_mode"})
    assert not group_commit_wanted(None, {})
    with pytest.raises(LoadRoutingError) as info:
        group_commit_wanted("bogus", {})
    assert info.value.message == INVALID_GROUP_COMMIT
    assert (
        INVALID_GROUP_COMMIT == "Header `group_commit` can only be `sync_mode`, `async_mode` or `off_mode`."
    )


def test_owner_is_kept_while_the_window_is_under_the_limit():
    aff = GroupCommitAffinity(rng=random.Random(7))
    props = {"group_commit_interval_ms": "2000", "group_commit_data_bytes": "1000"}
    owner = aff.owner(1, props, [10, 11, 12], now=0.0)
    assert all(aff.owner(1, props, [10, 11, 12], now=0.1) == owner for _ in range(50))
    # Past the limit in the window (interval/1000 + 1 = 3 s): a random eligible BE each time.
    aff.record_bytes(1, 1500, now=1.0)
    picks = {aff.owner(1, props, [10, 11, 12], now=1.5) for _ in range(60)}
    assert picks == {10, 11, 12}
    # The window slides: 3 s later the bytes are gone and the owner sticks again.
    owner = aff.owner(1, props, [10, 11, 12], now=5.0)
    assert all(aff.owner(1, props, [10, 11, 12], now=5.1) == owner for _ in range(20))
    # An owner that is no longer eligible (dead, unwritable, decommissioned) is replaced.
    others = [b for b in (10, 11, 12) if b != owner]
    assert aff.owner(1, props, others, now=5.2) in others
    assert aff.owner(1, props, [], now=5.3) is None


def test_owner_unreachable_and_forget():
    aff = GroupCommitAffinity(rng=random.Random(1))
    owner = aff.owner(5, {}, [1, 2], now=0)
    aff.owner_unreachable(5, owner)
    assert aff.tables[5].owner == 0
    owner = aff.owner(5, {}, [1, 2], now=0)
    aff.forget_backend(owner)
    assert aff.tables[5].owner == 0


# --- the FE's Location ----------------------------------------------------------------------------
class _Monitor:
    def __init__(self, be, rt):
        self.be, self.rt = be, rt

    def choose_for_load(self):
        return self.be, self.rt

    def group_commit_owner(self, table):
        return self.be, self.rt


def _fe(tags=None, forward=True, policy=""):
    be = SimpleNamespace(id=1, host="10.0.0.13", tags=tags or {})
    rt = SimpleNamespace(http_port=8040)
    cfg = SimpleNamespace(
        streamload_redirect_policy=policy, enable_group_commit_streamload_be_forward=forward
    )
    return SimpleNamespace(backends=_Monitor(be, rt), cfg=cfg)


def _table(**props):
    return SimpleNamespace(id=9, properties=props)


def test_location_plain_and_forwarded():
    fe = _fe(tags={"public_endpoint": "198.18.0.2:18040"})
    headers = {"Host": "127.0.0.1:8030"}
    loc = redirect_location(fe, headers, "/api/d/t/_stream_load", "", _table(), "u@x", "p:w")
    assert loc == "http://u%40x:p%3Aw@10.0.0.13:8040/api/d/t/_stream_load"
    # A group-commit load through the public endpoint (a load balancer): forwarded to the owner.
    headers = {"Host": "127.0.0.1:8030", "redirect-policy": "public", "group_commit": "async_mode"}
    loc = redirect_location(fe, headers, "/api/d/t/_stream_load", "k=v", _table(), "root", "")
    assert loc == "http://root:@198.18.0.2:18040/api/d/t/_stream_load_forward?k=v&forward_to=10.0.0.13:8040"
    loc = redirect_location(fe, headers, "/api/d/t/_stream_load/", "", _table(), "root", "")
    assert loc == "http://root:@198.18.0.2:18040/api/d/t/_stream_load_forward/?forward_to=10.0.0.13:8040"
    # The table property counts as group commit too; forwarding off: the endpoint as is.
    headers = {"Host": "127.0.0.1:8030", "redirect-policy": "public"}
    assert "_stream_load_forward" in redirect_location(
        fe, headers, "/api/d/t/_stream_load", "", _table(group_commit_mode="async_mode"), "root", ""
    )
    loc = redirect_location(
        _fe(tags={"public_endpoint": "198.18.0.2:18040"}, forward=False),
        {**headers, "group_commit": "async_mode"}, "/api/d/t/_stream_load", "", _table(), "root", "",
    )  # fmt: skip
    assert loc == "http://root:@198.18.0.2:18040/api/d/t/_stream_load"
    # The endpoint is the owner itself: no forward.
    headers = {"Host": "127.0.0.1:8030", "redirect-policy": "direct", "group_commit": "async_mode"}
    assert redirect_location(fe, headers, "/api/d/t/_stream_load", "", _table(), "root", "").endswith(
        "@10.0.0.13:8040/api/d/t/_stream_load"
    )
