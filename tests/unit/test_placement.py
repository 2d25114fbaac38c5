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
"""The placement client's URL building, deadline and error mapping.

A stub adapter stands in for keystoneauth here; the functional tests talk
to a real placement.
"""

import http.client
import os
from unittest import mock
import urllib.parse

import hypothesis
from hypothesis import strategies as st
from keystoneauth1 import exceptions as ks_exc
from oslo_config import cfg
import requests
import urllib3

from nova_image_traits import conf as nit_conf
from nova_image_traits import exception
from nova_image_traits import placement
from nova_image_traits.placement import cache as placement_cache
from nova_image_traits.placement import client as placement_client
from nova_image_traits.placement import workers
from tests.unit import base
from tests.unit import fakes

TRAITS_URL = '/resource_providers/%s/traits' % fakes.ROOT


def _session(routes=None, timeout=10.0, max_url_length=8000, **kwargs):
    adapter = fakes.StubAdapter(routes, **kwargs)
    client = placement.PlacementClient(adapter)
    return client.start(timeout, max_url_length), adapter


class VersionTest(base.TestCase):

    def test_parse_version(self):
        self.assertEqual((1, 31), placement.parse_version('1.31'))
        self.assertGreater(placement.parse_version('1.10'),
                           placement.parse_version('1.9'))

    def test_parse_bad_version(self):
        for text in ('1', 'abc', '1.x', '', None):
            self.assertRaises(ValueError, placement.parse_version, text)

    def test_format_version(self):
        self.assertEqual('1.36', placement.format_version((1, 36)))
        self.assertEqual('1.6', placement.format_version(
            placement.parse_version('1.6')))


class BuildUrlTest(base.TestCase):

    def test_no_params(self):
        session, _adapter = _session()
        self.assertEqual(TRAITS_URL, session.build_url(TRAITS_URL))

    def test_params_keep_placement_separators_readable(self):
        session, _adapter = _session()
        url = session.build_url('/allocation_candidates', [
            ('resources', 'VCPU:1,MEMORY_MB:512'),
            ('required', 'CUSTOM_A,!CUSTOM_B'), ('in_tree', fakes.ROOT)])
        self.assertEqual(
            '/allocation_candidates?resources=VCPU:1,MEMORY_MB:512'
            '&required=CUSTOM_A,!CUSTOM_B&in_tree=' + fakes.ROOT, url)

    def test_special_characters_are_encoded(self):
        session, _adapter = _session()
        url = session.build_url('/p', [('required', 'A&in_tree=x#y z\n')])
        self.assertEqual('/p?required=A%26in_tree%3Dx%23y+z%0A', url)

    @hypothesis.given(st.lists(st.tuples(st.text(min_size=1), st.text()),
                               max_size=6))
    def test_round_trip(self, params):
        session, _adapter = _session(max_url_length=10 ** 6)
        url = session.build_url('/allocation_candidates', params)
        split = urllib.parse.urlsplit(url)
        self.assertEqual('/allocation_candidates', split.path)
        self.assertEqual(params, urllib.parse.parse_qsl(
            split.query, keep_blank_values=True))
        for char in ('#', ' ', '\n', '\r', '\x00'):
            self.assertNotIn(char, url)
        if params:
            self.assertEqual(len(params), len(split.query.split('&')))

    def test_max_url_length(self):
        session, _adapter = _session(max_url_length=600)
        path = '/' + 'a' * 599
        self.assertEqual(path, session.build_url(path))
        err = self.assertRaises(exception.RequestTooLarge,
                                session.build_url, path + 'a')
        self.assertEqual({'length': 601, 'limit': 600}, err.kwargs)

    def test_max_url_length_counts_the_query(self):
        session, _adapter = _session(max_url_length=600)
        self.assertRaises(exception.RequestTooLarge, session.build_url,
                          '/p', [('required', 'A,' * 300)])

    def test_too_long_is_never_sent(self):
        session, adapter = _session(max_url_length=600)
        self.assertRaises(exception.RequestTooLarge, session.get,
                          '/p', [('required', 'A' * 600)])
        self.assertEqual([], adapter.calls)
        self.assertEqual(0, session.requests)

    def test_quote_path_segment(self):
        self.assertEqual('a%2Fb%3Fc%23d%20e', placement.quote('a/b?c#d e'))


class DeadlineTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.now = 1000.0
        patcher = mock.patch('time.monotonic', lambda: self.now)
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_timeout_is_the_time_left(self):
        session, adapter = _session({TRAITS_URL: {'traits': []}},
                                    timeout=5.0)
        self.now += 3.0
        session.get(TRAITS_URL, version='1.6')
        self.assertEqual(2.0, adapter.calls[0][1]['timeout'])

    def test_deadline_exceeded(self):
        session, adapter = _session({TRAITS_URL: {'traits': []}},
                                    timeout=5.0)
        self.now += 5.0
        err = self.assertRaises(exception.DecisionDeadlineExceeded,
                                session.get, TRAITS_URL)
        self.assertEqual('deadline', err.cause)
        self.assertIsInstance(err, exception.PlacementError)
        self.assertEqual('The decision took longer than 5.0 seconds '
                         '([image_traits] decision_timeout) before its next '
                         'request.', err.message)
        self.assertEqual([], adapter.calls)
        self.assertEqual(0, session.requests)

    def test_deadline_waiting_for_a_thread_or_an_answer(self):
        session, adapter = _session({TRAITS_URL: {'traits': []}},
                                    timeout=5.0)
        for waited_for, error, words in (
                ('slot', exception.PlacementPoolTimeout,
                 'No connection to placement became free for %s within the '
                 '5.0 seconds' % TRAITS_URL),
                ('answer', exception.DecisionDeadlineExceeded,
                 'decision_timeout) waiting for placement to answer GET %s.'
                 % TRAITS_URL)):
            session.client._workers.call = mock.Mock(
                side_effect=workers.Abandoned(waited_for))
            err = self.assertRaises(error, session.get, TRAITS_URL)
            self.assertEqual('deadline', err.cause)
            self.assertIn(words, err.message)
        self.assertEqual([], adapter.calls)

    def test_a_request_taken_after_the_deadline_is_not_sent(self):
        session, adapter = _session({TRAITS_URL: {'traits': []}},
                                    timeout=5.0)

        def late(func, wait, grace=0.0):
            # A worker that takes the request once the deadline has passed.
            self.now += 6.0
            return func()

        session.client._workers.call = late
        err = self.assertRaises(exception.DecisionDeadlineExceeded,
                                session.get, TRAITS_URL)
        self.assertEqual('deadline', err.cause)
        self.assertIn('before a thread took its request', err.message)
        self.assertEqual([], adapter.calls)

    def test_each_request_gets_what_is_left(self):
        session, adapter = _session({TRAITS_URL: {'traits': []}},
                                    timeout=5.0)
        for step in (1.0, 1.5, 2.0):
            self.now += step
            session.get(TRAITS_URL)
        self.assertEqual([4.0, 2.5, 0.5],
                         [kw['timeout'] for _u, kw in adapter.calls])

    def test_placement_timeout_still_bounds_each_request(self):
        # [image_traits] decision_timeout help: "Each request's timeout is
        # the smaller of the time left and [placement] timeout". An explicit
        # timeout= replaces the keystoneauth session's own timeout.
        session, adapter = _session({TRAITS_URL: {'traits': []}},
                                    timeout=20.0, session_timeout=2.0)
        session.get(TRAITS_URL)
        self.assertLessEqual(adapter.calls[0][1]['timeout'], 2.0)


class RequestTest(base.TestCase):

    def test_returns_the_body_and_counts(self):
        session, adapter = _session({TRAITS_URL: {'traits': ['A']}})
        self.assertEqual({'traits': ['A']},
                         session.get(TRAITS_URL, version='1.6'))
        self.assertEqual(1, session.requests)
        url, kwargs = adapter.calls[0]
        self.assertEqual(TRAITS_URL, url)
        self.assertEqual('1.6', kwargs['microversion'])
        self.assertIs(False, kwargs['raise_exc'])

    def test_no_microversion_header_for_none(self):
        session, adapter = _session({'/': fakes.versions()})
        session.get('/', version=None)
        self.assertNotIn('microversion', adapter.calls[0][1])

    def _error(self, answer):
        session, _adapter = _session({TRAITS_URL: answer})
        err = self.assertRaises(exception.PlacementError, session.get,
                                TRAITS_URL)
        self.assertEqual(1, session.requests)
        return err

    def test_transport_errors(self):
        cases = [
            (ks_exc.ConnectFailure('refused'),
             exception.PlacementUnreachable, 'unreachable'),
            (ks_exc.ConnectTimeout('slow connect'),
             exception.PlacementTimeout, 'timeout'),
            (ks_exc.RequestTimeout('slow answer'),
             exception.PlacementTimeout, 'timeout'),
            (ks_exc.EndpointNotFound('no placement in the catalog'),
             exception.PlacementUnreachable, 'unreachable'),
            (ks_exc.DiscoveryFailure('no version document'),
             exception.PlacementUnreachable, 'unreachable'),
            (ks_exc.SSLError('bad certificate'),
             exception.PlacementUnreachable, 'unreachable'),
            (ks_exc.UnknownConnectionError('body cut short', ValueError()),
             exception.PlacementMalformedResponse, 'malformed-response'),
        ]
        for raised, kind, cause in cases:
            err = self._error(raised)
            self.assertIs(kind, type(err), raised)
            self.assertEqual(cause, err.cause)
            self.assertIn(type(raised).__name__, err.message)

    def test_http_error(self):
        err = self._error(fakes.response(500, {'errors': [
            {'status': 500, 'title': 'Internal Server Error',
             'detail': 'boom\nsecond line'}]}))
        self.assertIs(exception.PlacementBadResponse, type(err))
        self.assertEqual('http-error', err.cause)
        self.assertEqual(500, err.kwargs['status'])
        self.assertIn('boom second line', err.message)
        self.assertNotIn('\n', err.message)

    def test_http_error_without_json(self):
        err = self._error(fakes.response(502, raw=b'<html>bad gateway',
                                         reason='Bad Gateway'))
        self.assertEqual('http-error', err.cause)
        self.assertIn('Bad Gateway', err.message)

    def test_not_found_keeps_the_status(self):
        err = self._error(fakes.response(404, {'errors': []},
                                         reason='Not Found'))
        self.assertEqual(404, err.kwargs['status'])

    def test_406_is_an_unsupported_microversion(self):
        # Placement still advertises 1.39: the 406 is not a rollback.
        session, adapter = _session({TRAITS_URL: fakes.response(
            406, {'errors': [{'detail': 'Unacceptable version header: '
                                        '1.99'}]}),
            '/': fakes.versions('1.39')})
        err = self.assertRaises(exception.PlacementError, session.get,
                                TRAITS_URL, version='1.6')
        self.assertEqual([TRAITS_URL, '/'], adapter.paths)
        self.assertIs(exception.PlacementBadResponse, type(err))
        self.assertEqual('unsupported-microversion', err.cause)
        # The class keeps its own cause for the next error.
        self.assertEqual('http-error', exception.PlacementBadResponse.cause)

    def test_non_json_body_is_malformed(self):
        err = self._error(fakes.response(200, raw=b'<html>proxy</html>'))
        self.assertIs(exception.PlacementMalformedResponse, type(err))
        self.assertEqual('malformed-response', err.cause)

    def test_json_list_body_is_malformed(self):
        err = self._error(fakes.response(200, ['traits']))
        self.assertIs(exception.PlacementMalformedResponse, type(err))

    def test_require(self):
        self.assertEqual([], placement.require([], list, '/u', 'traits'))
        err = self.assertRaises(exception.PlacementMalformedResponse,
                                placement.require, {}, list, '/u', 'traits')
        self.assertIn('traits is not a list', err.message)


class MicroversionTest(base.TestCase):

    def test_negotiated_once_per_client(self):
        adapter = fakes.StubAdapter({'/': fakes.versions('1.30')})
        client = placement.PlacementClient(adapter)
        first = client.start(10, 8000)
        second = client.start(10, 8000)
        self.assertEqual((1, 30), first.max_version())
        self.assertFalse(second.supports('1.31'))
        self.assertTrue(second.supports('1.30'))
        self.assertTrue(first.supports('1.6'))
        self.assertEqual(['/'], adapter.paths)
        self.assertEqual(1, first.requests)
        self.assertEqual(0, second.requests)

    def test_highest_of_several_versions(self):
        body = fakes.versions('1.9')
        body['versions'].append(dict(body['versions'][0], max_version='1.39'))
        session, _adapter = _session({'/': body})
        self.assertEqual((1, 39), session.max_version())

    def test_malformed_version_document_is_not_cached(self):
        session, adapter = _session({'/': {'versions': []}})
        for _i in range(2):
            err = self.assertRaises(exception.PlacementMalformedResponse,
                                    session.max_version)
            self.assertEqual('malformed-response', err.cause)
        self.assertEqual(2, len(adapter.calls))

    def test_other_malformed_version_documents(self):
        for body in ({}, {'versions': 'v1'}, {'versions': [{}]},
                     {'versions': [{'max_version': 'latest'}]}):
            session, _adapter = _session({'/': body})
            self.assertRaises(exception.PlacementMalformedResponse,
                              session.max_version)


class VersionRenegotiationTest(base.TestCase):

    def _versions(self, *tops):
        answers = [fakes.versions(t) for t in tops]
        return lambda _query: answers.pop(0)

    def test_ttl_zero_negotiates_in_every_decision(self):
        adapter = fakes.StubAdapter({'/': self._versions('1.30', '1.39')})
        client = placement.PlacementClient(adapter)
        self.assertFalse(client.start(10, 8000, version_ttl=0).supports(
            '1.31'))
        self.assertTrue(client.start(10, 8000, version_ttl=0).supports(
            '1.31'))
        self.assertEqual(['/', '/'], adapter.paths)

    def test_ttl_keeps_the_version(self):
        adapter = fakes.StubAdapter({'/': self._versions('1.30', '1.39')})
        client = placement.PlacementClient(adapter)
        for _i in range(3):
            session = client.start(10, 8000, version_ttl=3600)
            self.assertEqual((1, 30), session.max_version())
        self.assertEqual(['/'], adapter.paths)

    def test_406_after_a_rollback_renegotiates(self):
        adapter = fakes.StubAdapter({
            '/': self._versions('1.39', '1.30'),
            TRAITS_URL: fakes.response(406, {'errors': [
                {'detail': 'Unacceptable version header: 1.36'}]})})
        client = placement.PlacementClient(adapter)
        session = client.start(10, 8000)
        self.assertTrue(session.supports('1.36'))
        err = self.assertRaises(exception.PlacementVersionChanged,
                                session.get, TRAITS_URL, version='1.36')
        self.assertEqual('unsupported-microversion', err.cause)
        self.assertIn('1.30', err.message)
        self.assertEqual((1, 30), session.max_version())
        # Once per decision: a second 406 is an error.
        err = self.assertRaises(exception.PlacementBadResponse,
                                session.get, TRAITS_URL, version='1.36')
        self.assertEqual(['/', TRAITS_URL, '/', TRAITS_URL], adapter.paths)


class GetClientTest(base.TestCase):

    def test_one_client_per_settings(self):
        with mock.patch.object(placement, 'build_adapter') as build:
            first = placement.get_client(self.conf)
            self.assertIs(first, placement.get_client(self.conf))
            # Lazy: nothing is built before the first request.
            build.assert_not_called()
            other = cfg.ConfigOpts()
            nit_conf.register_opts(other)
            other([])
            self.assertIs(first, placement.get_client(other))

    def test_changed_setting_gives_a_new_client(self):
        first = placement.get_client(self.conf)
        self.flags(group='placement', endpoint_override='http://p2:8778')
        second = placement.get_client(self.conf)
        self.assertIsNot(first, second)
        self.flags(group='placement', endpoint_override='http://p2:8778',
                   region_name='Two')
        self.assertIsNot(second, placement.get_client(self.conf))
        self.assertIsNot(first, placement.get_client(self.conf, 5.0))

    def test_auth_plugin_options_count(self):
        self.flags(group='placement', auth_type='admin_token')
        # Registers the plugin's options, as keystoneauth would.
        placement.settings(self.conf)
        self.flags(group='placement', endpoint='http://p1:8778')
        first = placement.get_client(self.conf)
        self.flags(group='placement', token='other')
        self.assertIsNot(first, placement.get_client(self.conf))

    def test_auth_plugin_is_loaded_once(self):
        self.flags(group='placement', auth_type='admin_token')
        placement.settings(self.conf)
        with mock.patch.object(placement_cache.ks_loading,
                               'get_auth_plugin_conf_options') as loader:
            placement.settings(self.conf)
            # Another configuration lacks the options: registered again,
            # from the options learnt the first time.
            other = cfg.ConfigOpts()
            nit_conf.register_opts(other)
            other([])
            other.set_override('auth_type', 'admin_token', 'placement')
            placement.settings(other)
        self.assertEqual(0, loader.call_count)
        self.assertIn('token', other.placement)

    def test_a_forked_child_builds_its_own_clients(self):
        first = placement.get_client(self.conf)
        pid = os.fork()
        if pid == 0:
            # NOTE(founders): the child must not reuse the parent's client,
            # its sockets or its locks.
            try:
                child = placement.get_client(self.conf)
                code = 0 if child is not first else 1
            except BaseException:
                code = 2
            os._exit(code)
        _pid, status = os.waitpid(pid, 0)
        self.assertEqual(0, os.waitstatus_to_exitcode(status))
        self.assertIs(first, placement.get_client(self.conf))

    def test_old_clients_are_dropped(self):
        first = placement.get_client(self.conf)
        for i in range(placement_cache.MAX_CLIENTS):
            self.flags(group='placement',
                       endpoint_override='http://p%d:8778' % i)
            placement.get_client(self.conf)
        self.assertEqual(placement_cache.MAX_CLIENTS,
                         len(placement_cache._CLIENTS))
        self.conf.clear_override('endpoint_override', group='placement')
        self.assertIsNot(first, placement.get_client(self.conf))


class BrokeAfterConnectingTest(base.TestCase):
    """keystoneauth's ConnectFailure, as it raises it for requests' error."""

    @staticmethod
    def failure(reason):
        try:
            try:
                raise requests.exceptions.ConnectionError(reason)
            except requests.exceptions.ConnectionError:
                raise ks_exc.ConnectFailure('Unable to establish connection')
        except ks_exc.ConnectFailure as e:
            return e

    def test_a_connection_closed_or_reset_after_it_was_made(self):
        for error in (http.client.RemoteDisconnected('closed'),
                      ConnectionResetError(104, 'reset by peer'),
                      BrokenPipeError(32, 'broken pipe')):
            self.assertTrue(placement_client.broke_after_connecting(
                self.failure(urllib3.exceptions.ProtocolError(
                    'Connection aborted.', error))), error)

    def test_a_connection_refused_or_never_made(self):
        for reason in (urllib3.exceptions.MaxRetryError(None, '/', None),
                       urllib3.exceptions.ProtocolError(
                           'Connection aborted.', TimeoutError()),
                       'a message'):
            self.assertFalse(placement_client.broke_after_connecting(
                self.failure(reason)), reason)
        self.assertFalse(placement_client.broke_after_connecting(
            ks_exc.ConnectFailure('raised alone')))


class BudgetTest(base.TestCase):

    def _client(self, **retries):
        adapter = mock.Mock(spec=['get', 'session', 'connect_retries',
                                  'status_code_retries',
                                  'connect_retry_delay',
                                  'status_code_retry_delay'])
        adapter.session = mock.Mock(timeout=retries.pop('timeout', None))
        for name in ('connect_retries', 'status_code_retries',
                     'connect_retry_delay', 'status_code_retry_delay'):
            setattr(adapter, name, retries.get(name))
        return placement.PlacementClient(adapter)

    def test_no_retries_use_all_the_time(self):
        kwargs = self._client().budget(4.0)
        self.assertEqual(4.0, kwargs['timeout'])
        self.assertEqual(0, kwargs['connect_retries'])

    def test_placement_timeout_caps_each_attempt(self):
        self.assertEqual(1.5, self._client(timeout=1.5).budget(4.0)[
            'timeout'])

    def test_retries_and_delays_fit_the_deadline(self):
        client = self._client(connect_retries=10, status_code_retries=10,
                              connect_retry_delay=0.2,
                              status_code_retry_delay=0.3)
        for remaining in (0.1, 0.5, 1.0, 3.0, 20.0):
            kw = client.budget(remaining)
            attempts = 1 + kw['connect_retries'] + kw['status_code_retries']
            worst = (attempts * kw['timeout'] +
                     kw['connect_retries'] * kw['connect_retry_delay'] +
                     kw['status_code_retries'] *
                     kw['status_code_retry_delay'])
            self.assertLessEqual(worst, remaining + 1e-9, kw)
        # With enough time every configured retry is kept.
        self.assertEqual(10, client.budget(20.0)['connect_retries'])


class TestCandidateVersion(base.TestCase):
    """The lowest microversion each candidate parameter needs."""

    def test_versions(self):
        version = placement.candidate_version
        base = [('resources', 'VCPU:1'), ('in_tree', 'rp')]
        self.assertEqual('1.31', version(base))
        self.assertEqual('1.31', version(base + [
            ('resources1', 'CUSTOM_MAGIC:1'), ('required1', 'CUSTOM_A'),
            ('required', 'CUSTOM_B,!CUSTOM_C'), ('member_of', 'in:a,b')]))
        self.assertEqual('1.33', version(base + [
            ('resources_PORT', 'NET_BW_EGR_KILOBIT_PER_SEC:10')]))
        self.assertEqual('1.35', version(base + [
            ('root_required', 'COMPUTE_STORAGE_BUS_SCSI')]))
        self.assertEqual('1.36', version(base + [
            ('required2', 'CUSTOM_NUMA'), ('resources1', 'VCPU:1')]))
        self.assertEqual('1.36', version(base + [
            ('same_subtree', '1,2')]))
