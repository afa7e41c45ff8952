"""Tests for rdqn.dashboard.share: the links a class opens and their QR code."""

from __future__ import annotations

import segno

from rdqn.dashboard.share import CLASS_CODE, follow_link, qr_png, run_link, server_address


def test_server_address_keeps_scheme_host_port_and_prefix() -> None:
    assert server_address("http://10.0.0.5:8501/live?preset=e14&alpha=0.8") == (
        "http://10.0.0.5:8501"
    )
    assert server_address("https://school.example/rdqn/live?x=1") == "https://school.example/rdqn"


def test_a_loopback_address_becomes_the_network_one_for_students() -> None:
    url = "http://localhost:8501/live?alpha=0.8"
    assert server_address(url, network_host="192.168.1.20") == "http://192.168.1.20:8501"
    assert server_address("http://127.0.0.1/live", network_host="10.0.0.2") == "http://10.0.0.2"
    assert server_address(url) == "http://localhost:8501"
    assert server_address("http://10.0.0.5:8501/live", network_host="1.2.3.4") == (
        "http://10.0.0.5:8501"
    )


def test_links() -> None:
    assert follow_link("http://h:8501", "K7Q2") == "http://h:8501/live?follow=K7Q2"
    assert run_link("http://h:8501", "0123456789ab") == "http://h:8501/live?run=0123456789ab"


def test_class_codes_avoid_letters_a_projector_blurs() -> None:
    assert CLASS_CODE.match("K7Q2") and CLASS_CODE.match("ZZ99")
    for bad in ("K0Q2", "KOQ2", "K1Q2", "KIQ2", "k7q2", "K7Q", "K7Q22"):
        assert not CLASS_CODE.match(bad), bad


def test_qr_code_is_a_png_of_the_link() -> None:
    link = "http://10.0.0.5:8501/live?follow=K7Q2"
    png = qr_png(link, scale=4)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    symbol = segno.make(link, error="m")
    side = (symbol.symbol_size(scale=4, border=2))[0]
    assert side > 80  # a version the phone can read at a few metres
    assert len(png) > 200
