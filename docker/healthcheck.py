"""Container health check: exit 0 when this node's /api/health answers 200 (it has a quorum)."""

import os
import sys
import urllib.error
import urllib.request

HTTP_SETTING = "QUORUMQ_HTTP"
DEFAULT_HTTP = "0.0.0.0:8080"


def health_url(http_setting: str) -> str:
    """The local health URL for the node's HTTP listen address (HOST:PORT, any host)."""
    port = http_setting.rpartition(":")[2]
    return f"http://127.0.0.1:{port}/api/health"


def main() -> int:
    """Return 0 if the node reports itself healthy, 1 otherwise."""
    url = health_url(os.environ.get(HTTP_SETTING, DEFAULT_HTTP))
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return 0 if answer.status == 200 else 1
    except (urllib.error.URLError, OSError) as exc:
        print(f"{url}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
