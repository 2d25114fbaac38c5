# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""Security: secrets in logs, TLS settings, users steering the decision.

* A known token and a known password never appear in any log record, at
  any level, of any logger (ours, keystoneauth's, openstacksdk's,
  placement's), in successful and in failing decisions. A gate in front of
  the real placement accepts only the secret token (and the test builder's
  ``admin``), and serves a minimal Keystone v3 token API so that the
  ``password`` plugin really authenticates.
* keystoneauth's TLS settings of ``[placement]`` (``cafile``, ``insecure``,
  ``certfile``/``keyfile``) are honoured, through a TLS-terminating proxy
  on loopback in front of the real placement, with certificates made in
  the test.
* Image properties cannot steer the decision: properties that look like
  our options change nothing, and a user cannot turn a refusal into a
  placement error that ``on_placement_error=accept`` would let through.
  (Forged scheduler hints are the filter's tests.)
"""

import datetime
import ipaddress
import json
import logging
import os
import socket
import ssl
import threading
import uuid

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography import x509
from cryptography.x509.oid import NameOID
import fixtures
import webob

from nova_image_traits import decision
from nova_image_traits import engine
from nova_image_traits import placement
from nova_image_traits import request as nit_request
from tests.functional import test_faults
from tests.functional import test_strategies

SECRET_TOKEN = 'SECRET-TOKEN-abc123'
SECRET_PASSWORD = 'SECRET-PASSWORD-xyz789'
TRAIT = test_strategies.TRAIT
STRATEGIES = test_strategies.STRATEGIES
IDENTITY = '/identity/v3'


class SecretGate:
    """WSGI middleware: a token gate and a minimal Keystone v3 in front.

    ``POST /identity/v3/auth/tokens`` with the right password issues
    :data:`SECRET_TOKEN` and a catalog pointing at placement. Placement
    requests must carry that token (or the builder's ``admin``); it is
    replaced by ``admin`` for placement's noauth2, so the secret never
    reaches placement's own request context. While :attr:`fault` is set,
    it answers placement GETs instead (see ``test_faults``).
    """

    def __init__(self, app):
        self.app = app
        self.endpoint = None
        self.fault = None
        #: When set, the secret token and the password stop working.
        self.revoked = False

    def _token(self, req):
        try:
            body = json.loads(req.body)
            ident = body['auth']['identity']['password']['user']
        except (ValueError, KeyError, TypeError):
            return webob.Response(status=400)
        if self.revoked or ident.get('password') != SECRET_PASSWORD:
            return webob.Response(status=401, json_body={'error': {
                'code': 401, 'title': 'Unauthorized',
                'message': 'The request you have made requires '
                           'authentication.'}})
        domain = {'id': 'default', 'name': 'Default'}
        endpoints = [dict(id=str(uuid.uuid4()), interface=i,
                          region='RegionOne', region_id='RegionOne',
                          url=self.endpoint)
                     for i in ('public', 'internal')]
        body = {'token': {
            'methods': ['password'],
            'expires_at': '2099-12-31T23:59:59.000000Z',
            'issued_at': '2026-01-01T00:00:00.000000Z',
            'user': {'id': 'u-admin', 'name': 'admin', 'domain': domain},
            'project': {'id': 'p-admin', 'name': 'admin', 'domain': domain},
            'roles': [{'id': 'r-admin', 'name': 'admin'}],
            'catalog': [{'type': 'placement', 'name': 'placement',
                         'id': 's-placement', 'endpoints': endpoints}]}}
        resp = webob.Response(status=201, json_body=body)
        resp.headers['X-Subject-Token'] = SECRET_TOKEN
        return resp

    def __call__(self, environ, start_response):
        req = webob.Request(environ)
        if req.path_info.startswith(IDENTITY):
            if (req.method == 'POST' and
                    req.path_info == IDENTITY + '/auth/tokens'):
                return self._token(req)(environ, start_response)
            return webob.Response(status=404)(environ, start_response)
        token = environ.get('HTTP_X_AUTH_TOKEN')
        if token == SECRET_TOKEN and not self.revoked:
            environ['HTTP_X_AUTH_TOKEN'] = 'admin'
        elif token not in (None, 'admin'):
            return webob.Response(status=401)(environ, start_response)
        fault = self.fault
        if fault is not None and req.method == 'GET':
            answer = fault(environ, self.app)
            if answer is not None:
                return answer(environ, start_response)
        return self.app(environ, start_response)


class SecurityTestBase(test_strategies.StrategyTestBase,
                       test_faults.DecisionAssertions):

    def placement_middleware(self):
        def wrap(app):
            self.gate = SecretGate(app)
            return self.gate
        return wrap

    def setUp(self):
        super().setUp()
        self.gate.endpoint = self.endpoint
        self.builder.ensure_traits([test_faults.ABSENT])
        self.node = self.build_host('root')
        placement.reset_clients()
        self.addCleanup(placement.reset_clients)

    def rebuild(self, props=None, instance=None):
        if props is None:
            props = {'trait:%s' % TRAIT: 'required'}
        return nit_request.RebuildRequest(
            instance_uuid=instance or self.instance,
            compute_node_uuid=self.node, image_properties=props,
            flavor=test_strategies.FLAVOR, original_image_properties={},
            host='test-host')

    def decide(self, conf, strategy, props=None, client=None, **opts):
        conf.set_override('strategy', strategy, 'image_traits')
        for name, value in opts.items():
            conf.set_override(name, value, 'image_traits')
        return engine.decide(self.rebuild(props), conf=conf, client=client)


class TestSecretsNeverLogged(SecurityTestBase):

    def setUp(self):
        super().setUp()
        # Every logger, every level: ours, keystoneauth, openstacksdk,
        # urllib3, placement (in this process).
        self.all_logs = self.useFixture(fixtures.FakeLogger(
            level=logging.DEBUG,
            format='%(levelname)s %(name)s %(message)s'))
        # Services (oslo.log's default_log_levels) quiet some libraries,
        # keystoneauth among them; open every logger up to DEBUG here.
        for name, logger in list(logging.root.manager.loggerDict.items()):
            if isinstance(logger, logging.Logger):
                self.addCleanup(logger.setLevel, logger.level)
                for attr in ('disabled', 'propagate'):
                    self.addCleanup(setattr, logger, attr,
                                    getattr(logger, attr))
                logger.setLevel(logging.NOTSET)
                logger.disabled = False
                logger.propagate = True

    def assertNoSecret(self, *results):
        output = self.all_logs.output
        for secret in (SECRET_TOKEN, SECRET_PASSWORD):
            self.assertNotIn(secret, output)
            for result in results:
                for text in (result.user_reason(), result.detail,
                             result.message, repr(result)):
                    self.assertNotIn(secret, text)

    def exercise(self, conf):
        """Successful and failing decisions of every strategy."""
        results = []
        for strategy in STRATEGIES:
            results.append(self.decide(conf, strategy))
            results.append(self.decide(
                conf, strategy, {'trait:%s' % test_faults.ABSENT:
                                 'required'}))
            results.append(self.decide(
                conf, strategy, {'trait:custom bad\nname': 'required'}))
        for on_error in ('reject', 'accept'):
            self.gate.fault = test_faults.on_paths(test_faults.json_error(
                500, 'Boom', 'boom'), root=True)
            for strategy in STRATEGIES:
                results.append(self.decide(conf, strategy,
                                           on_placement_error=on_error))
            self.gate.fault = None
        return results

    def test_admin_token_never_logged(self):
        conf = test_faults.write_conf(self, test_faults.admin_token_opts(
            self.endpoint, token=SECRET_TOKEN))
        results = self.exercise(conf)
        root_traits = results[3 * STRATEGIES.index('root_traits')]
        self.assertEqual(decision.ACCEPT, root_traits.outcome)
        self.assertTrue(any(r.outcome == decision.ERROR for r in results))
        # keystoneauth did log every request at DEBUG, with the token
        # replaced by its hash: the capture is not vacuous.
        self.assertIn('REQ: curl', self.all_logs.output)
        self.assertIn('X-Auth-Token: {SHA256}', self.all_logs.output)
        self.assertNoSecret(*results)

    def test_password_never_logged(self):
        conf = self.password_conf()
        results = self.exercise(conf)
        # The password plugin really authenticated against the gate.
        self.assertIn(('POST', IDENTITY + '/auth/tokens'),
                      self.server.recorder)
        root_traits = results[3 * STRATEGIES.index('root_traits')]
        self.assertEqual(decision.ACCEPT, root_traits.outcome)
        self.assertNoSecret(*results)
        # The configuration dump nova logs at start masks them too.
        conf.log_opt_values(logging.getLogger('nova.conf.dump'),
                            logging.DEBUG)
        self.assertIn('placement.password', self.all_logs.output)
        self.assertNoSecret(*results)

    def password_conf(self):
        return test_faults.write_conf(self, {
            'auth_type': 'v3password',
            'auth_url': self.endpoint + IDENTITY,
            'username': 'admin', 'password': SECRET_PASSWORD,
            'user_domain_id': 'default', 'project_name': 'admin',
            'project_domain_id': 'default'})

    def test_revoked_credentials_never_logged(self):
        # The token is revoked and the password changed while the service
        # runs: keystoneauth re-authenticates once, fails, and the decision
        # is a placement error. Nothing secret is logged on the way.
        conf = self.password_conf()
        client = test_faults.new_client(conf)
        self.assertEqual(decision.ACCEPT, self.decide(
            conf, 'root_traits', client=client).outcome)
        self.gate.revoked = True
        result = self.decide(conf, 'root_traits', client=client)
        self.assertEqual(decision.ERROR, result.outcome)
        self.assertFalse(result.allowed)
        self.assertIn('401', result.detail)
        self.assertNoSecret(result)

    def test_token_never_logged_when_unreachable(self):
        proxy = test_faults.TCPProxy(self.server.port)
        self.addCleanup(proxy.stop)
        conf = test_faults.write_conf(self, test_faults.admin_token_opts(
            proxy.endpoint, token=SECRET_TOKEN, connect_retries=1,
            connect_retry_delay=0.01))
        client = test_faults.new_client(conf)
        proxy.refuse()
        results = [self.decide(conf, strategy, client=client)
                   for strategy in test_faults.PLACEMENT_STRATEGIES]
        for result in results:
            self.assertEqual('unreachable', result.cause)
        # keystoneauth logged its retries (WARNING), without the token.
        self.assertIn('Retrying', self.all_logs.output)
        self.assertNoSecret(*results)


# -- TLS -------------------------------------------------------------------

def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject, key, issuer, issuer_key, ca=False, server=False):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(_name(subject)).issuer_name(_name(issuer))
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None),
                              critical=True))
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName([
            x509.DNSName('localhost'),
            x509.IPAddress(ipaddress.ip_address('127.0.0.1'))]),
            critical=False)
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True,
            content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False), critical=True)
        builder = builder.add_extension(
            x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
            critical=False)
    else:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(
                issuer_key.public_key()), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


class PKI:
    """Test certificates, as PEM files in ``path``.

    A CA, a server certificate for 127.0.0.1 and localhost, and a client
    certificate, both signed by the CA.
    """

    def __init__(self, path, name='test'):
        def write(fname, data):
            full = os.path.join(path, '%s-%s' % (name, fname))
            with open(full, 'wb') as f:
                f.write(data)
            return full

        def key_pem(key):
            return key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption())

        def cert_pem(cert):
            return cert.public_bytes(serialization.Encoding.PEM)

        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = _cert('%s CA' % name, ca_key, '%s CA' % name, ca_key, ca=True)
        server_key = ec.generate_private_key(ec.SECP256R1())
        server = _cert('127.0.0.1', server_key, '%s CA' % name, ca_key,
                       server=True)
        client_key = ec.generate_private_key(ec.SECP256R1())
        client = _cert('nova', client_key, '%s CA' % name, ca_key)
        self.cafile = write('ca.pem', cert_pem(ca))
        self.server_cert = write('server.pem', cert_pem(server))
        self.server_key = write('server.key', key_pem(server_key))
        self.client_cert = write('client.pem', cert_pem(client))
        self.client_key = write('client.key', key_pem(client_key))


class TLSProxy:
    """TLS termination on loopback in front of the real placement.

    :param upstream_port: the real placement's (plain HTTP) port
    :param pki: the :class:`PKI` whose server certificate is presented
    :param client_ca: when set, client certificates signed by this CA
        file are required
    """

    def __init__(self, upstream_port, pki, client_ca=None):
        self.upstream_port = upstream_port
        self.handshake_errors = []
        self._stop = threading.Event()
        self.use(pki, client_ca)
        self.sock = socket.socket()
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.endpoint = 'https://127.0.0.1:%d' % self.port
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def use(self, pki, client_ca=None):
        """Present ``pki``'s server certificate from now on."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(pki.server_cert, pki.server_key)
        if client_ca:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(client_ca)
        self.ctx = ctx

    def _run(self):
        while not self._stop.is_set():
            try:
                conn, _addr = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=self._serve, args=(conn,),
                             daemon=True).start()

    def _serve(self, conn):
        conn.settimeout(10)
        try:
            tls = self.ctx.wrap_socket(conn, server_side=True)
        except (ssl.SSLError, OSError) as e:
            self.handshake_errors.append(str(e))
            conn.close()
            return
        # NOTE(founders): one thread per connection, one request per
        # connection: placement's test server closes after each response, and
        # an SSLSocket must never be read and written from two threads at once
        # (OpenSSL then garbles the stream at random).
        try:
            request = self._read_request(tls)
            if request:
                with socket.create_connection(
                        ('127.0.0.1', self.upstream_port)) as up:
                    up.sendall(request)
                    while True:
                        data = up.recv(65536)
                        if not data:
                            break
                        tls.sendall(data)
        except (OSError, ssl.SSLError) as e:
            self.handshake_errors.append(str(e))
        finally:
            tls.close()

    @staticmethod
    def _read_request(tls):
        data = b''
        while b'\r\n\r\n' not in data:
            chunk = tls.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, _sep, body = data.partition(b'\r\n\r\n')
        length = 0
        for line in head.split(b'\r\n')[1:]:
            name, _colon, value = line.partition(b':')
            if name.strip().lower() == b'content-length':
                length = int(value.strip())
        while len(body) < length:
            chunk = tls.recv(65536)
            if not chunk:
                break
            body += chunk
        return head + b'\r\n\r\n' + body

    def stop(self):
        self._stop.set()
        self._thread.join()
        self.sock.close()


class TestTLS(SecurityTestBase):

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.pki = PKI(tmp, 'placement')
        self.other = PKI(tmp, 'rogue')

    def proxy(self, client_ca=None):
        proxy = TLSProxy(self.server.port, self.pki, client_ca=client_ca)
        self.addCleanup(proxy.stop)
        return proxy

    def tls_conf(self, proxy, **opts):
        return test_faults.write_conf(self, test_faults.admin_token_opts(
            proxy.endpoint, **opts), {'decision_timeout': 5})

    def assertDecides(self, conf):
        """Every placement strategy decides normally through TLS."""
        for strategy in test_faults.PLACEMENT_STRATEGIES:
            result = self.decide(conf, strategy)
            self.assertEqual(decision.ACCEPT, result.outcome,
                             (strategy, result.cause, result.detail))

    def assertTLSRefused(self, conf, client=None, ssl_in_detail=True):
        """A clear placement error naming the failure; no exception."""
        for on_error in ('reject', 'accept'):
            try:
                result = self.decide(conf, 'root_traits', client=client,
                                     on_placement_error=on_error)
            except Exception as e:
                self.fail('engine.decide raised %s: %s' % (
                    type(e).__name__, e))
            self.assertEqual(decision.ERROR, result.outcome, result.detail)
            self.assertEqual(on_error == 'accept', result.allowed)
            self.assertIn(result.cause, ('unreachable', 'tls-error'),
                          result.detail)
            if ssl_in_detail:
                self.assertIn('SSL', result.detail)

    def test_cafile_is_honoured(self):
        proxy = self.proxy()
        self.assertDecides(self.tls_conf(proxy, cafile=self.pki.cafile))
        self.assertEqual([], proxy.handshake_errors)

    def test_insecure_is_honoured(self):
        proxy = self.proxy()
        self.assertDecides(self.tls_conf(proxy, insecure=True))

    def test_client_certificate_is_honoured(self):
        proxy = self.proxy(client_ca=self.pki.cafile)
        self.assertDecides(self.tls_conf(
            proxy, cafile=self.pki.cafile, certfile=self.pki.client_cert,
            keyfile=self.pki.client_key))

    def test_tls_failures_at_first_use(self):
        # Decided through the engine's own process-wide client, as nova's
        # services do: no cafile (the system bundle does not trust the
        # test CA), the cafile of another CA, and no client certificate
        # for a placement that requires one.
        proxy = self.proxy()
        # keystoneauth's version discovery, which runs first, does not say
        # why it failed; the request path does (below).
        for opts in ({}, {'cafile': self.other.cafile}):
            self.assertTLSRefused(self.tls_conf(proxy, **opts),
                                  ssl_in_detail=False)
        self.assertTrue(proxy.handshake_errors)
        strict = self.proxy(client_ca=self.pki.cafile)
        self.assertTLSRefused(self.tls_conf(strict, cafile=self.pki.cafile),
                              ssl_in_detail=False)

    def test_server_certificate_changes_to_untrusted(self):
        # The client was built while placement presented a trusted
        # certificate; then an untrusted one appears (a man in the
        # middle, or a botched renewal).
        proxy = self.proxy()
        conf = self.tls_conf(proxy, cafile=self.pki.cafile)
        client = test_faults.new_client(conf)
        self.assertEqual(decision.ACCEPT,
                         self.decide(conf, 'root_traits',
                                     client=client).outcome)
        proxy.use(self.other)
        self.assertTLSRefused(conf, client=client)


# -- users steering the decision ------------------------------------------

MIMICS = {
    'image_traits:strategy': 'reject',
    'image_traits:fallback_strategy': 'reject',
    'image_traits:on_placement_error': 'accept',
    'image_traits:max_image_traits': '1000',
    'image_traits:decision_timeout': '0',
    'strategy': 'in_tree_candidates',
    'on_placement_error': 'accept',
    'fallback_strategy': 'tree_traits',
    'max_url_length': '100000',
    '[image_traits]/on_placement_error': 'accept',
}


class TestUserCannotSteer(SecurityTestBase):

    def setUp(self):
        super().setUp()
        self.conf.set_override('on_placement_error', 'reject',
                               'image_traits')

    def test_mimicking_properties_change_nothing(self):
        for props in ({'trait:%s' % TRAIT: 'required'},
                      {'trait:%s' % test_faults.ABSENT: 'required'}):
            hostile = dict(props, **MIMICS)
            for strategy in STRATEGIES:
                plain = self.decide(self.conf, strategy, props,
                                    client=self.client)
                steered = self.decide(self.conf, strategy, hostile,
                                      client=self.client)
                for field in ('outcome', 'allowed', 'cause', 'strategy',
                              'fallback', 'required', 'missing'):
                    self.assertEqual(getattr(plain, field),
                                     getattr(steered, field),
                                     (strategy, field))

    def test_mimicking_properties_do_not_fail_open(self):
        # Placement is failing and the deployer fails closed: an image
        # saying on_placement_error=accept must not let it through.
        self.gate.fault = test_faults.on_paths(test_faults.json_error(
            503, 'Unavailable', 'later'), root=True)
        for strategy in test_faults.PLACEMENT_STRATEGIES:
            result = self.decide(
                self.conf, strategy,
                dict({'trait:%s' % TRAIT: 'required'}, **MIMICS),
                client=self.client)
            self.assertEqual(decision.ERROR, result.outcome, strategy)
            self.assertFalse(result.allowed, strategy)

    def test_user_cannot_force_an_error_to_fail_open(self):
        # The deployer fails open on placement errors. A user whose image
        # requires a trait the host lacks adds traits chosen to make
        # placement answer with an error: a long trait placement does not
        # know, many unknown traits. The decision must stay a refusal,
        # not become an error that on_placement_error=accept lets through.
        self.conf.set_override('on_placement_error', 'accept',
                               'image_traits')
        needed = {'trait:%s' % test_faults.ABSENT: 'required'}
        decoys = [
            {'trait:CUSTOM_' + 'Z' * 248: 'required'},
            {'trait:CUSTOM_DECOY_%02d_%s' % (i, 'Q' * 20): 'required'
             for i in range(40)},
        ]
        failures = []
        for extra in decoys:
            for strategy in STRATEGIES:
                result = self.decide(self.conf, strategy,
                                     dict(needed, **extra),
                                     client=self.client)
                if result.allowed or result.outcome != decision.REJECT:
                    failures.append((strategy, len(extra), result.outcome,
                                     result.cause))
        self.assertEqual([], failures)
