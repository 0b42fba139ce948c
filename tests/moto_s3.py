"""moto's S3 server, serving S3 alone, threaded, on a port of the caller's choosing.

moto's own server serves every AWS service: for each request it works out which one is asked,
listing its ~200 service folders under a lock that every request shares. That was a third of
the CPU the suite's S3 servers spent, and it held each request back behind the others. The
tests ask S3 alone, so `S3Server` hands every request to moto's S3 application: the same code
answers them, without the guessing.
"""

from __future__ import annotations

import socket

from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.moto_server.werkzeug_app import MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server


def free_port() -> int:
    """A loopback port free now, for a server to take."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class S3Server(ThreadedMotoServer):
    def wsgi_app(self):
        """The application served: moto's S3 (subclasses wrap it)."""
        return create_backend_app("s3")

    def _server_entry(self) -> None:
        self._server = make_server(self._ip_address, self._port, self.wsgi_app(), threaded=True,
                                   request_handler=MotoRequestHandler)
        self._server_ready_event.set()
        self._server.serve_forever()
