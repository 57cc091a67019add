"""What a direct-access process can reach: run by the egress tests as a stdio tool, inside an MCP
server and as a `run` child, with HTTP_PROXY pointing at jp's egress proxy. Each way out is tried
with and without honouring the proxy variables; the result is one JSON object, and the test also
checks on its own servers that nothing arrived where it must not."""
import json
import os
import socket
import sys
import urllib.error
import urllib.request


def get(url, proxied=True):
    handler = urllib.request.ProxyHandler() if proxied else urllib.request.ProxyHandler({})
    try:
        with urllib.request.build_opener(handler).open(url, timeout=10) as r:
            return f"{r.status} {r.read().decode().strip()}"
    except urllib.error.HTTPError as e:
        return f"{e.code} {e.read().decode(errors='replace').strip()[:300]}"
    except Exception as e:  # noqa: BLE001 - every failure is a result here
        return f"error {e}"


def tunnel(host, port):
    """CONNECT through the proxy, then one request inside the tunnel."""
    proxy = os.environ.get("HTTPS_PROXY", "http://127.0.0.1:3128").rsplit(":", 1)
    try:
        with socket.create_connection((proxy[0].split("//")[1], int(proxy[1])), timeout=10) as s:
            s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            head = s.recv(4096)
            status = head.decode(errors="replace").split(" ", 2)[1] if b" " in head else repr(head)
            if status != "200":
                while chunk := s.recv(4096):
                    head += chunk
                body = head.split(b"\r\n\r\n", 1)[-1].decode(errors="replace").strip()
                return f"{status} {body[:300]}"
            s.sendall(f"GET /tunnel HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            body = b""
            while chunk := s.recv(4096):
                body += chunk
            return "200 " + body.decode(errors="replace").split("\r\n\r\n", 1)[-1].strip()
    except OSError as e:
        return f"error {e}"


def direct(host, port):
    try:
        with socket.create_connection((host, port), timeout=5):
            return "connected"
    except OSError as e:
        return f"error {e}"


def udp(host, port, payload):
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(3)
        s.sendto(payload, (host, port))
        try:
            return "answered " + s.recv(512).decode(errors="replace")
        except OSError as e:
            return f"sent, no answer ({e})"
    except OSError as e:
        return f"error {e}"


def probe(a, b, c_host, u):
    out = {"proxy_env": os.environ.get("HTTP_PROXY")}
    out["proxy_a"] = get(f"http://127.0.0.1:{a}/a")
    out["proxy_b"] = get(f"http://127.0.0.1:{b}/b")
    out["proxy_c"] = get(f"http://{c_host}:{a}/c")
    out["tunnel_a"] = tunnel("127.0.0.1", a)
    out["tunnel_b"] = tunnel("127.0.0.1", b)
    out["tunnel_c"] = tunnel(c_host, a)
    out["direct_a"] = get(f"http://127.0.0.1:{a}/direct", proxied=False)
    out["direct_b"] = direct("127.0.0.1", b)
    out["direct_c"] = direct(c_host, a)
    out["udp"] = udp("127.0.0.1", u, b"udp-probe")
    # A DNS query sent straight to the test's UDP server, and the system resolver.
    query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"
    out["dns_udp"] = udp("127.0.0.1", u, query)
    try:
        out["dns"] = str(socket.getaddrinfo("example.com", 80)[0][4])
    except OSError as e:
        out["dns"] = f"error {e}"
    return out


if __name__ == "__main__":
    a, b, c_host, u = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    print(json.dumps(probe(a, b, c_host, u)))
