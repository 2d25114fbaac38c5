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

:class:`PlacementServer` runs ``placement.deploy.loadapp`` (the same
pipeline a production placement uses, with ``noauth2``) behind a threaded
``wsgiref`` server on ``127.0.0.1`` and a free port, backed by a private
in-memory SQLite database.

Placement keeps some state in module globals, so only one server can run in
a process at a time (:meth:`PlacementServer.start` enforces this):

* the database: ``placement.db_api.placement_context_manager`` is a global
  oslo.db enginefacade.  The server patches its own engine factory into it
  (``patch_factory``) and restores the previous one on :meth:`stop`.  This
  also clashes with Nova's ``PlacementFixture``; do not use both at once.
* the policy enforcer (``placement.policy._ENFORCER``), reset on start/stop.
* the "standard traits/resource classes already synced" flags.
* oslo.db reads defaults for options we do not set from the global
  ``cfg.CONF`` ``[database]`` group (placement does the same).

Everything else, including placement's own options, lives in a private
``oslo_config.cfg.ConfigOpts``: placement passes that object explicitly to
its handlers (``PlacementHandler(config=...)``) and to oslo.policy.

The in-memory database is one SQLite connection (oslo.db uses a
``StaticPool`` for ``sqlite://``) shared by all request threads, so the
server runs placement for one request at a time; recording, the
``middleware`` hook and the HTTP handling stay concurrent.  This costs no
throughput (placement is CPU-bound Python under the GIL) and is what makes
SQLite reliable here: with a file database and concurrent requests,
placement's deferred transactions fail with "database is locked".  Each
request is therefore atomic, which is at least as strict as a real
placement.
"""

import json
import socket
import socketserver
import threading
import urllib.parse
from wsgiref import simple_server

from microversion_parse import middleware as mp_middleware
from oslo_config import cfg
from oslo_db.sqlalchemy import enginefacade
from oslo_log import log as logging
import webob
import webob.dec

from placement import conf as placement_conf
from placement.db.sqlalchemy import migration
from placement import db_api
from placement import deploy
from placement import microversion
from placement.objects import resource_class
from placement.objects import trait
from placement import policy

LOG = logging.getLogger(__name__)

#: Token accepted by placement's ``noauth2`` middleware as an admin.
ADMIN_TOKEN = 'admin'
#: WSGI environ key holding the request target exactly as sent.
RAW_TARGET_ENVIRON = 'nova_image_traits.request_target'

# Held while a server is running; see the module docstring.
_ACTIVE = threading.Lock()


class PlacementServerError(Exception):
    """The simulated placement server could not be started."""


class _QuietHandler(simple_server.WSGIRequestHandler):
    """Request handler: TCP_NODELAY, no access log, raw target recorded."""

    # Drop idle or stuck client connections instead of pinning a thread.
    timeout = 60

    def setup(self):
        """Disable Nagle so small responses are not delayed ~40 ms."""
        super().setup()
        self.connection.setsockopt(
            socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def get_environ(self):
        """Add the request target as received (path and raw query)."""
        environ = super().get_environ()
        environ[RAW_TARGET_ENVIRON] = self.path
        return environ

    def log_message(self, format, *args):
        """Suppress wsgiref's access log on stderr."""


class _ThreadingWSGIServer(socketserver.ThreadingMixIn,
                           simple_server.WSGIServer):
    """A wsgiref server that handles each connection in its own thread."""

    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        """Log errors such as clients hanging up instead of printing them.

        :param request: the client socket
        :param client_address: the client's address
        """
        LOG.debug('Error serving placement request from %s',
                  client_address, exc_info=True)


def _request_target(environ):
    """Return the request path and query string as the client sent them.

    :param environ: a WSGI environ
    """
    raw = environ.get(RAW_TARGET_ENVIRON)
    if raw is not None:
        return raw
    path = urllib.parse.quote(
        environ.get('SCRIPT_NAME', '') + environ.get('PATH_INFO', ''))
    query = environ.get('QUERY_STRING')
    return '%s?%s' % (path, query) if query else path


class _Recorder(object):
    """WSGI middleware appending ``(method, target)`` for every request."""

    def __init__(self, application, records, lock):
        """Create the middleware.

        :param application: the WSGI application to wrap
        :param records: list receiving ``(method, path_with_query)`` tuples
        :param lock: a lock guarding ``records``
        """
        self.application = application
        self.records = records
        self.lock = lock

    def __call__(self, environ, start_response):
        entry = (environ['REQUEST_METHOD'], _request_target(environ))
        with self.lock:
            self.records.append(entry)
        return self.application(environ, start_response)


class _Serializer(object):
    """WSGI middleware running its application for one request at a time.

    Every request shares one SQLite connection.
    """

    def __init__(self, application):
        """Create the middleware.

        :param application: the WSGI application to wrap
        """
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
            # Placement returns fully built bodies; drain them in the lock.
            result = self.application(environ, start_response)
            try:
                return list(result)
            finally:
                if hasattr(result, 'close'):
                    result.close()


class _VersionDocumentCap(object):
    """Make placement's responses advertise a capped max microversion.

    The microversion middleware inside the pipeline already refuses
    versions above the cap (see :attr:`PlacementServer.max_microversion`);
    placement's root handler and 406 error formatter however read the
    module-global version list.  This rewrites ``max_version`` in the
    ``GET /`` document and in 406 error bodies so that they agree with the
    cap.
    """

    def __init__(self, application):
        """Create the middleware, initially passing everything through.

        :param application: the placement WSGI application
        """
        self.application = application
        #: The capped max microversion (e.g. ``"1.30"``) or None.
        self.max_version = None

    @webob.dec.wsgify
    def __call__(self, req):
        max_version = self.max_version
        resp = req.get_response(self.application)
        if max_version is None:
            return resp
        is_root = req.path_info in ('', '/') and req.method == 'GET'
        if not (is_root or resp.status_int == 406):
            return resp
        try:
            doc = json.loads(resp.body)
        except ValueError:
            return resp
        for entry in doc.get('versions', []) + doc.get('errors', []):
            if 'max_version' in entry:
                entry['max_version'] = max_version
        resp.body = json.dumps(doc).encode('utf-8')
        return resp


def _find_microversion_middleware(app):
    """Walk a placement pipeline down to its MicroversionMiddleware.

    :param app: the application returned by ``placement.deploy.loadapp``
    :returns: the middleware instance, or None if it cannot be found
    """
    node = app
    for _hop in range(32):
        if isinstance(node, mp_middleware.MicroversionMiddleware):
            return node
        node = getattr(node, 'application', None)
        if node is None:
            return None
    return None


def _capped_versions(max_version):
    """Return placement's version list truncated after ``max_version``.

    :param max_version: ``"X.Y"``, or None for no cap
    :raises PlacementServerError: if placement has no such version
    """
    if max_version is None:
        return list(microversion.VERSIONS)
    if max_version not in microversion.VERSIONS:
        raise PlacementServerError(
            'max_microversion %s is not a placement microversion (known: '
            '%s..%s)' % (max_version, microversion.min_version_string(),
                         microversion.max_version_string()))
    cut = microversion.VERSIONS.index(max_version) + 1
    return list(microversion.VERSIONS[:cut])


def _make_conf(connection):
    """Build a private placement configuration.

    :param connection: SQLAlchemy URL of the placement database
    :returns: a parsed ``oslo_config.cfg.ConfigOpts``
    """
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


class PlacementServer(object):
    """The real Placement API on ``127.0.0.1``, for tests and simulations.

    Usage::

        with PlacementServer() as server:
            requests.get(server.endpoint + '/resource_providers',
                         headers={'X-Auth-Token': server.token})

    :param middleware: optional callable ``app -> app`` wrapped around the
        placement application (inside the recorder), e.g. to inject faults
    :param max_microversion: optional ``"X.Y"``; the server then behaves like
        an older placement whose highest microversion is ``X.Y``
    :param host: address to listen on
    :param port: TCP port; 0 picks a free one
    :param snapshot: bytes from :meth:`snapshot` of an earlier server (same
        placement version) to start from instead of an empty cloud
    """

    token = ADMIN_TOKEN

    def __init__(self, middleware=None, max_microversion=None,
                 host='127.0.0.1', port=0, snapshot=None):
        self.middleware = middleware
        self.initial_snapshot = snapshot
        _capped_versions(max_microversion)
        self._max_microversion = max_microversion
        self.host = host
        self._port = port
        self.conf = None
        self._recorder = []
        self._recorder_lock = threading.Lock()
        self._httpd = None
        self._thread = None
        self._facade = None
        self._reset_db = None
        self._owns_active = False
        self._mv_middleware = None
        self._doc_cap = None
        self._serializer = None

    @property
    def max_microversion(self):
        """Highest microversion served, ``"X.Y"``, or None for placement's.

        May be changed while the server runs: ``microversion_parse``'s
        middleware takes its version list per instance, so the cap affects
        only this server.  Requests above it get that middleware's real 406
        and ``latest`` means the cap.  Placement's root handler and 406
        error formatter read the module-global list, so their
        ``max_version`` fields are rewritten on the way out.
        """
        return self._max_microversion

    @max_microversion.setter
    def max_microversion(self, value):
        versions = _capped_versions(value)
        self._max_microversion = value
        if self._mv_middleware is not None:
            self._apply_cap(versions)

    def _apply_cap(self, versions):
        """Install a version list into the running pipeline.

        :param versions: the accepted microversions, oldest first
        """
        self._doc_cap.max_version = self._max_microversion
        self._mv_middleware.versions = versions

    @property
    def recorder(self):
        """List of ``(method, path_with_query)`` for every request served.

        ``path_with_query`` is the request target as the client sent it
        (percent-encoding kept).  The list is live; copy it before
        iterating while requests are in flight.
        """
        return self._recorder

    def reset_recorder(self):
        """Forget all recorded requests."""
        with self._recorder_lock:
            del self._recorder[:]

    @property
    def port(self):
        """The TCP port the server listens on (None when stopped)."""
        if self._httpd is None:
            return None
        return self._httpd.server_address[1]

    @property
    def endpoint(self):
        """Base URL of the placement API, e.g. ``http://127.0.0.1:PORT``."""
        if self._httpd is None:
            return None
        return 'http://%s:%d' % (self.host, self.port)

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
        self._owns_active = True
        try:
            app = self._load_app()
            self._serve(app)
        except BaseException:
            self.stop()
            raise
        LOG.debug('Placement serving at %s (max microversion %s)',
                  self.endpoint, self.max_microversion or 'latest')
        return self

    def _create_database(self):
        """Create an in-memory database and patch placement onto it.

        :returns: the SQLAlchemy URL of the database
        """
        url = 'sqlite://'
        self._facade = enginefacade.transaction_context()
        # thread_checkin only adds a sleep(0) per transaction (for eventlet).
        self._facade.configure(connection=url, thread_checkin=False)
        self._reset_db = db_api.placement_context_manager.patch_factory(
            self._facade)
        if self.initial_snapshot is None:
            migration.create_schema(db_api.get_placement_engine())
        else:
            self._with_sqlite(lambda conn: conn.deserialize(
                self.initial_snapshot))
        return url

    @staticmethod
    def _with_sqlite(func):
        """Call ``func`` with the database's ``sqlite3.Connection``.

        :param func: a callable taking the connection
        :returns: what ``func`` returns
        """
        raw = db_api.get_placement_engine().raw_connection()
        try:
            return func(raw.driver_connection)
        finally:
            raw.close()

    def snapshot(self):
        """Return the whole database as bytes, between two requests.

        Pass them as ``snapshot`` to a later server to skip rebuilding a
        large cloud: restoring 2000 hosts takes milliseconds.

        :returns: the serialized SQLite database
        """
        if not self.running:
            raise PlacementServerError('the server is not running')
        with self._serializer.lock:
            return self._with_sqlite(lambda conn: conn.serialize())

    def _load_app(self):
        """Build the full placement pipeline around our database.

        :returns: the WSGI application to serve
        """
        url = self._create_database()
        self.conf = _make_conf(url)
        _reset_placement_globals()
        policy.init(self.conf, suppress_deprecation_warnings=True)
        # loadapp also syncs the standard traits and resource classes.
        app = deploy.loadapp(self.conf)
        self._mv_middleware = _find_microversion_middleware(app)
        if self._mv_middleware is None:
            raise PlacementServerError(
                'cannot find the microversion middleware in the placement '
                'pipeline; placement.deploy changed shape')
        self._serializer = _Serializer(app)
        app = self._doc_cap = _VersionDocumentCap(self._serializer)
        self._apply_cap(_capped_versions(self._max_microversion))
        if self.middleware is not None:
            app = self.middleware(app)
        return _Recorder(app, self._recorder, self._recorder_lock)

    def _serve(self, app):
        """Bind a free port and serve ``app`` from a daemon thread.

        :param app: the WSGI application
        """
        self._httpd = simple_server.make_server(
            self.host, self._port, app, server_class=_ThreadingWSGIServer,
            handler_class=_QuietHandler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={'poll_interval': 0.05},
            name='placement-%d' % self.port, daemon=True)
        self._thread.start()

    def stop(self):
        """Stop serving, restore placement's globals, drop the database.

        Safe to call more than once, and after a failed :meth:`start`.
        """
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            if self._thread is not None:
                httpd.shutdown()
            httpd.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._serializer is not None:
            # Requests accepted before shutdown must not reach the database
            # once it is gone.
            self._serializer.close()
            self._serializer = None
        if self._reset_db is not None:
            self._reset_db()
            self._reset_db = None
        if self._facade is not None:
            self._facade.dispose_pool()
            self._facade = None
        self._mv_middleware = self._doc_cap = None
        if self._owns_active:
            _reset_placement_globals()
            self._owns_active = False
            _ACTIVE.release()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
        return False
