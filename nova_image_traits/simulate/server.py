#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""Serve the real Placement WSGI application over loopback HTTP.

:class:`PlacementServer` runs ``placement.deploy.loadapp`` (the pipeline a
production placement runs, with ``noauth2``) behind a threaded ``wsgiref``
server on ``127.0.0.1``, on a private in-memory SQLite database.
``simulate`` uses it as it is; the functional tests add request recording,
microversion caps and fault injection (``tests/functional/fixtures``).

Placement keeps state in module globals, so one server runs in a process
at a time: the oslo.db enginefacade of ``placement.db_api`` (patched with
``patch_factory`` on start and restored on stop, which also clashes with
nova's ``PlacementFixture``), the policy enforcer and the "standard traits
and resource classes synced" flags. Placement's own options live in a
private ``ConfigOpts``, which it passes to its handlers and to oslo.policy.

The in-memory database is one SQLite connection (oslo.db's ``StaticPool``)
shared by every request thread, so placement serves one request at a time
while the HTTP handling stays concurrent. Placement is CPU-bound Python
under the GIL, so this costs no throughput, and it is what makes SQLite
reliable: a file database with concurrent requests fails placement's
deferred transactions with "database is locked".
"""

import contextlib
import socket
import socketserver
import threading
from wsgiref import simple_server

from oslo_config import cfg
from oslo_db.sqlalchemy import enginefacade
from oslo_log import log as logging

from placement import conf as placement_conf
from placement.db.sqlalchemy import migration
from placement import db_api
from placement import deploy
from placement.objects import resource_class
from placement.objects import trait
from placement import policy

LOG = logging.getLogger(__name__)

#: Token accepted by placement's ``noauth2`` middleware as an admin.
ADMIN_TOKEN = 'admin'
#: A private in-memory SQLite database.
_DATABASE = 'sqlite://'

# Held while a server is running; see the module docstring.
_ACTIVE = threading.Lock()


class PlacementServerError(Exception):
    """The simulated placement server could not be started."""


class QuietHandler(simple_server.WSGIRequestHandler):
    """Request handler: TCP_NODELAY and no access log."""

    # NOTE(founders): drop idle or stuck client connections instead of
    # pinning a thread.
    timeout = 60

    def setup(self):
        """Disable Nagle so small responses are not delayed ~40 ms."""
        super().setup()
        self.connection.setsockopt(
            socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format, *args):
        """Suppress wsgiref's access log on stderr."""


class _ThreadingWSGIServer(socketserver.ThreadingMixIn,
                           simple_server.WSGIServer):
    """A wsgiref server that handles each connection in its own thread."""

    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        """Log errors such as clients hanging up instead of printing them."""
        LOG.debug('Error serving placement request from %s',
                  client_address, exc_info=True)


class _Serializer:
    """WSGI middleware running its application for one request at a time.

    Every request shares one SQLite connection.
    """

    def __init__(self, application):
        self.application = application
        self.lock = threading.Lock()
        self.closed = False

    def close(self):
        """Wait for the running request; refuse later ones with a 503."""
        with self.lock:
            self.closed = True

    def __call__(self, environ, start_response):
        with self.lock:
            if self.closed:
                start_response('503 Service Unavailable',
                               [('Content-Type', 'text/plain')])
                return [b'placement server stopped']
            # NOTE(founders): placement returns fully built bodies; drain
            # them in the lock.
            result = self.application(environ, start_response)
            try:
                return list(result)
            finally:
                if hasattr(result, 'close'):
                    result.close()


def _make_conf(connection):
    """A private, parsed placement configuration on ``connection``."""
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    conf.set_override('auth_strategy', 'noauth2', group='api')
    conf.set_override('connection', connection, group='placement_database')
    conf.set_override('sync_on_startup', False, group='placement_database')
    conf([], project='placement', default_config_files=[],
         default_config_dirs=[])
    return conf


def _reset_placement_globals():
    """Forget placement's process-global policy and sync state."""
    policy.reset()
    trait._TRAITS_SYNCED = False
    resource_class._RESOURCE_CLASSES_SYNCED = False


class PlacementServer:
    """The real Placement API on ``127.0.0.1``, for simulations and tests.

    A context manager: ``with PlacementServer() as server:``. Subclasses
    shape the service through :meth:`_create_schema`, :meth:`_wrap` and
    :attr:`handler_class`.

    :param host: address to listen on
    :param port: TCP port; 0 picks a free one
    :ivar port: the TCP port listened on, None when stopped
    :ivar endpoint: base URL of the placement API,
        ``http://127.0.0.1:PORT``, None when stopped
    """

    token = ADMIN_TOKEN
    #: The request handler class of the HTTP server.
    handler_class = QuietHandler

    def __init__(self, host='127.0.0.1', port=0):
        self.host, self._port = host, port
        # NOTE(founders): all set by start() and cleared by stop(), which
        # undoes what start() did through _cleanup, last first.
        self.conf = self._httpd = self._serializer = None
        self.port = self.endpoint = None
        self._cleanup = contextlib.ExitStack()

    @property
    def running(self):
        """True between :meth:`start` and :meth:`stop`."""
        return self._httpd is not None

    def start(self):
        """Create the database, load placement and start serving.

        :returns: self
        :raises PlacementServerError: if another server runs in-process
        """
        if self.running:
            return self
        if not _ACTIVE.acquire(blocking=False):
            raise PlacementServerError(
                'another PlacementServer is running in this process; '
                'placement keeps its database in a module global')
        self._cleanup.callback(_ACTIVE.release)
        self._cleanup.callback(_reset_placement_globals)
        try:
            self._serve(self._load_app())
        except BaseException:
            self.stop()
            raise
        LOG.debug('Placement serving at %s', self.endpoint)
        return self

    def _create_schema(self):
        """Create placement's tables in the fresh database."""
        migration.create_schema(db_api.get_placement_engine())

    def _wrap(self, app):
        """Return the application to serve around the serialized ``app``.

        :param app: placement's pipeline, one request at a time
        """
        return app

    def _load_app(self):
        """Return placement's whole pipeline on a new database, to serve."""
        facade = enginefacade.transaction_context()
        # NOTE(founders): thread_checkin only adds a sleep(0) per
        # transaction, for eventlet.
        facade.configure(connection=_DATABASE, thread_checkin=False)
        self._cleanup.callback(facade.dispose_pool)
        self._cleanup.callback(
            db_api.placement_context_manager.patch_factory(facade))
        self._create_schema()
        self.conf = _make_conf(_DATABASE)
        _reset_placement_globals()
        policy.init(self.conf, suppress_deprecation_warnings=True)
        # NOTE(founders): loadapp also syncs the standard traits and
        # resource classes. Requests accepted before a shutdown must not
        # reach the database once it is gone: the serializer is closed.
        self._serializer = _Serializer(deploy.loadapp(self.conf))
        self._cleanup.callback(self._serializer.close)
        return self._wrap(self._serializer)

    def _serve(self, app):
        """Bind a free port and serve ``app`` from a daemon thread."""
        httpd = simple_server.make_server(
            self.host, self._port, app, server_class=_ThreadingWSGIServer,
            handler_class=self.handler_class)
        self._cleanup.callback(httpd.server_close)
        thread = threading.Thread(
            target=httpd.serve_forever, kwargs={'poll_interval': 0.05},
            name='placement-%d' % httpd.server_port, daemon=True)
        thread.start()
        self._cleanup.callback(thread.join)
        self._cleanup.callback(httpd.shutdown)
        self._httpd, self.port = httpd, httpd.server_port
        self.endpoint = 'http://%s:%d' % (self.host, self.port)

    def stop(self):
        """Stop serving, restore placement's globals, drop the database.

        Safe to call more than once, and after a failed :meth:`start`.
        """
        self._httpd = self._serializer = self.port = self.endpoint = None
        self._cleanup.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
        return False
