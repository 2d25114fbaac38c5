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
"""Functional tests of the simulated placement server and cloud builder."""

import json
import socket
import threading
import uuid

from placement import microversion
import requests
import testtools

from nova_image_traits.simulate import cloud
from nova_image_traits.simulate import http as sim_http
from tests.functional import base
from tests.functional.fixtures import server as placement_server

PROJECT = 'b1a5e07e-0d4e-4b9f-9d43-6f1b6a6f0c01'
USER = 'c2b6f18f-1e5f-4c0a-8e54-7a2c7b7a1d02'


class TestPlacementServer(base.FunctionalTestCase):

    def test_root_lists_versions_without_auth(self):
        resp = requests.get(self.endpoint + '/', timeout=10)
        self.assertEqual(200, resp.status_code)
        version = resp.json()['versions'][0]
        self.assertEqual(microversion.max_version_string(),
                         version['max_version'])
        self.assertEqual('1.0', version['min_version'])

    def test_requests_need_a_token(self):
        resp = requests.get(self.endpoint + '/resource_providers',
                            timeout=10)
        self.assertEqual(401, resp.status_code)

    def test_standard_traits_are_synced(self):
        resp = self.placement_request(
            'GET', '/traits?name=in:HW_CPU_X86_AVX2,COMPUTE_STATUS_DISABLED',
            version='1.39')
        self.assertEqual(200, resp.status_code)
        self.assertEqual({'HW_CPU_X86_AVX2', 'COMPUTE_STATUS_DISABLED'},
                         set(resp.json()['traits']))

    def test_recorder_keeps_exact_targets(self):
        self.builder.get('/')
        self.server.reset_recorder()
        root = str(uuid.uuid4())
        paths = [
            '/resource_providers?in_tree=%s&required=CUSTOM_A' % root,
            '/resource_providers?required=in%3ACUSTOM_A%2CCUSTOM_B',
            '/allocation_candidates?resources=VCPU:1&in_tree=%s' % root,
        ]
        for path in paths:
            self.placement_request('GET', path, version='1.39')
        self.placement_request('DELETE', '/traits/CUSTOM_NOPE',
                               version='1.39')
        expected = [('GET', p) for p in paths]
        expected.append(('DELETE', '/traits/CUSTOM_NOPE'))
        self.assertEqual(expected, self.server.recorder)
        self.server.reset_recorder()
        self.assertEqual([], self.server.recorder)

    def test_only_one_server_per_process(self):
        other = placement_server.PlacementServer()
        self.assertRaises(placement_server.PlacementServerError, other.start)
        other.stop()
        self.assertEqual(200, self.placement_request(
            'GET', '/resource_providers').status_code)

    def test_unknown_cap_is_refused(self):
        self.assertRaises(placement_server.PlacementServerError,
                          placement_server.PlacementServer,
                          max_microversion='1.99')

    def test_concurrent_writes_do_not_fail(self):
        errors = []

        def create(index):
            try:
                self.builder.create_compute_node(
                    'cn-%d' % index, traits=['CUSTOM_C%d' % (index % 3)])
            except Exception as exc:
                errors.append(exc)

        threads = [threading.Thread(target=create, args=(i,))
                   for i in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual([], errors)
        rps = self.builder.get('/resource_providers')['resource_providers']
        self.assertEqual(12, len(rps))


class TestStopFreesPort(testtools.TestCase):

    def test_stop_frees_port_and_threads(self):
        before = set(threading.enumerate())
        srv = placement_server.PlacementServer()
        with srv:
            port = srv.port
            self.assertEqual(200, requests.get(srv.endpoint + '/',
                                               timeout=10).status_code)
        self.assertIsNone(srv.endpoint)
        srv.stop()
        self.assertEqual(set(), set(threading.enumerate()) - before)
        self.assertRaises(requests.ConnectionError, requests.get,
                          'http://127.0.0.1:%d/' % port, timeout=10)
        # Closed server-side connections linger in TIME_WAIT, so rebind
        # the way servers do, with SO_REUSEADDR.
        sock = socket.socket()
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(('127.0.0.1', port))
        finally:
            sock.close()
        with placement_server.PlacementServer(port=port) as again:
            self.assertEqual(port, again.port)

    def test_restart_starts_empty(self):
        for _attempt in range(2):
            with placement_server.PlacementServer() as srv:
                builder = cloud.CloudBuilder(srv.endpoint)
                self.assertEqual(
                    [], builder.get('/resource_providers')[
                        'resource_providers'])
                builder.create_compute_node('cn', traits=['CUSTOM_X'])


class TestCloudBuilder(base.FunctionalTestCase):

    def _tree_uuids(self, root):
        found = self.builder.get('/resource_providers?in_tree=%s' % root)
        return {rp['name']: rp for rp in found['resource_providers']}

    def test_nested_tree(self):
        node = self.builder.create_compute_node(
            'cn1', vcpus=16, traits=['HW_CPU_X86_AVX2', 'CUSTOM_GOLD'],
            children=[
                {'name': 'cn1-numa0', 'inventory': {'VCPU': 4}},
                {'name': 'cn1-pf0', 'parent': 'cn1-numa0',
                 'inventory': {'CUSTOM_VF': {'total': 8, 'max_unit': 2}},
                 'traits': ['CUSTOM_PHYSNET_A']},
            ])
        self.builder.create_compute_node('other')

        tree = self._tree_uuids(node.uuid)
        self.assertEqual({'cn1', 'cn1-numa0', 'cn1-pf0'}, set(tree))
        self.assertEqual(node.children['cn1-numa0'],
                         tree['cn1-pf0']['parent_provider_uuid'])
        self.assertEqual(node.uuid, tree['cn1-pf0']['root_provider_uuid'])
        self.assertIsNone(tree['cn1']['parent_provider_uuid'])

        traits = self.builder.get(
            '/resource_providers/%s/traits' % node.uuid)['traits']
        self.assertEqual({'HW_CPU_X86_AVX2', 'CUSTOM_GOLD'}, set(traits))
        pf = node.children['cn1-pf0']
        inv = self.builder.get(
            '/resource_providers/%s/inventories' % pf)['inventories']
        self.assertEqual(8, inv['CUSTOM_VF']['total'])
        self.assertEqual(2, inv['CUSTOM_VF']['max_unit'])
        root_inv = self.builder.get(
            '/resource_providers/%s/inventories' % node.uuid)['inventories']
        self.assertEqual({'VCPU', 'MEMORY_MB', 'DISK_GB'}, set(root_inv))

        found = self.builder.get(
            '/resource_providers?in_tree=%s&required=CUSTOM_PHYSNET_A'
            % node.uuid)['resource_providers']
        self.assertEqual([pf], [rp['uuid'] for rp in found])

    def test_sharing_provider_and_allocations(self):
        agg = str(uuid.uuid4())
        node = self.builder.create_compute_node(
            'cn1', vcpus=8, disk_gb=0,
            children=[{'name': 'cn1-gpu', 'inventory': {'VGPU': 2},
                       'traits': ['CUSTOM_GPU_A']}])
        self.builder.add_to_aggregate(node.uuid, agg)
        ss = self.builder.make_sharing_provider(
            'ss1', agg, {'DISK_GB': 1000}, traits=['CUSTOM_NFS'])

        ss_traits = self.builder.get(
            '/resource_providers/%s/traits' % ss)['traits']
        self.assertEqual({'CUSTOM_NFS', cloud.SHARES_TRAIT}, set(ss_traits))
        self.assertEqual([agg], self.builder.get(
            '/resource_providers/%s/aggregates' % ss)['aggregates'])

        cands = self.builder.get(
            '/allocation_candidates?resources=VCPU:1,DISK_GB:10'
            '&resources1=VGPU:1')
        self.assertEqual(1, len(cands['allocation_requests']))
        alloc = cands['allocation_requests'][0]['allocations']
        self.assertEqual({node.uuid, ss, node.children['cn1-gpu']},
                         set(alloc))

        consumer = str(uuid.uuid4())
        self.builder.allocate(consumer, {
            node.uuid: {'VCPU': 2, 'MEMORY_MB': 512},
            node.children['cn1-gpu']: {'VGPU': 1},
            ss: {'DISK_GB': 10},
        }, PROJECT, USER)
        got = self.builder.get('/allocations/%s' % consumer)
        self.assertEqual(PROJECT, got['project_id'])
        self.assertEqual(10, got['allocations'][ss]['resources']['DISK_GB'])
        self.assertEqual({node.uuid, ss, node.children['cn1-gpu']},
                         set(got['allocations']))

        # A second call replaces the allocations (consumer generation).
        self.builder.allocate(consumer, {node.uuid: {'VCPU': 1}},
                              PROJECT, USER)
        got = self.builder.get('/allocations/%s' % consumer)
        self.assertEqual({node.uuid: {'resources': {'VCPU': 1}}},
                         {rp: {'resources': a['resources']}
                          for rp, a in got['allocations'].items()})

    def test_fill_makes_host_full(self):
        node = self.builder.create_compute_node('full', vcpus=5)
        self.builder.set_inventory(node.uuid, {
            'VCPU': {'total': 5, 'max_unit': 2},
            'MEMORY_MB': 4096,
        })
        spare = self.builder.create_compute_node('spare')
        query = '/allocation_candidates?resources=VCPU:1&in_tree=%s'

        self.assertEqual(1, len(self.builder.get(
            query % node.uuid)['allocation_requests']))
        consumers = self.builder.fill(node.uuid, 'VCPU')
        self.assertEqual(3, len(consumers))
        usages = self.builder.get(
            '/resource_providers/%s/usages' % node.uuid)['usages']
        self.assertEqual(5, usages['VCPU'])
        self.assertEqual([], self.builder.get(
            query % node.uuid)['allocation_requests'])
        self.assertEqual(1, len(self.builder.get(
            query % spare.uuid)['allocation_requests']))
        self.assertEqual([], self.builder.fill(node.uuid, 'VCPU'))
        self.builder.delete_allocations(consumers[0])
        self.assertEqual(1, len(self.builder.get(
            query % node.uuid)['allocation_requests']))

    def test_build_background(self):
        uuids = self.builder.build_background(
            25, traits=['CUSTOM_BG', 'HW_CPU_X86_AVX2'], vcpus=4,
            batch_size=10)
        self.assertEqual(25, len(set(uuids)))
        found = self.builder.get(
            '/resource_providers?required=CUSTOM_BG,HW_CPU_X86_AVX2'
            '&resources=VCPU:4')['resource_providers']
        self.assertEqual(set(uuids), {rp['uuid'] for rp in found})
        inv = self.builder.get(
            '/resource_providers/%s/inventories' % uuids[-1])['inventories']
        self.assertEqual({'VCPU': 4, 'MEMORY_MB': 16384, 'DISK_GB': 100},
                         {rc: r['total'] for rc, r in inv.items()})

    def test_errors_carry_the_body(self):
        node = self.builder.create_compute_node('cn1')
        exc = self.assertRaises(
            sim_http.PlacementRequestError, self.builder.set_traits,
            node.uuid, ['NOT_A_REAL_TRAIT'])
        self.assertEqual(400, exc.status)
        self.assertIn('NOT_A_REAL_TRAIT', str(exc))

    def test_builder_negotiates_latest(self):
        self.assertEqual((1, 39), self.builder.microversion)


def _build_snapshot_cloud(builder):
    builder.build_background(30, traits=['CUSTOM_BG'], name_prefix='snap')
    builder.create_compute_node('snap-cn', traits=['CUSTOM_SNAP'])


class TestSnapshot(base.FunctionalTestCase):

    def placement_snapshot(self):
        return base.snapshot_of('test-simulate-server', _build_snapshot_cloud)

    def _names(self, query=''):
        found = self.builder.get('/resource_providers' + query)
        return {rp['name'] for rp in found['resource_providers']}

    def test_starts_from_snapshot(self):
        self.assertEqual(31, len(self._names()))
        self.assertEqual({'snap-cn'}, self._names('?required=CUSTOM_SNAP'))
        self.builder.create_compute_node('new', traits=['CUSTOM_SNAP'])
        self.assertEqual({'snap-cn', 'new'},
                         self._names('?required=CUSTOM_SNAP'))

    def test_tests_do_not_share_changes(self):
        # Whichever test runs second sees no 'new' provider from the other.
        self.assertNotIn('new', self._names())
        self.builder.create_compute_node('new')

    def test_snapshot_round_trip(self):
        self.builder.create_compute_node('extra')
        data = self.server.snapshot()
        self.server.stop()
        with placement_server.PlacementServer(snapshot=data) as again:
            found = cloud.CloudBuilder(again.endpoint).get(
                '/resource_providers?name=extra')['resource_providers']
            self.assertEqual(1, len(found))


class TestMicroversionCap(base.FunctionalTestCase):

    placement_max_microversion = '1.30'

    def test_root_advertises_cap(self):
        doc = requests.get(self.endpoint + '/', timeout=10).json()
        self.assertEqual('1.30', doc['versions'][0]['max_version'])

    def test_higher_version_gets_406(self):
        resp = self.placement_request('GET', '/resource_providers',
                                      version='1.31')
        self.assertEqual(406, resp.status_code)
        error = resp.json()['errors'][0]
        self.assertEqual(406, error['status'])
        self.assertEqual('1.30', error['max_version'])
        self.assertEqual('1.0', error['min_version'])
        self.assertIn('1.31', error['detail'])

    def test_cap_and_latest(self):
        resp = self.placement_request('GET', '/resource_providers',
                                      version='1.30')
        self.assertEqual(200, resp.status_code)
        resp = self.placement_request('GET', '/resource_providers',
                                      version='latest')
        self.assertEqual(200, resp.status_code)
        self.assertEqual('placement 1.30',
                         resp.headers['OpenStack-API-Version'])

    def test_in_tree_on_candidates_needs_1_31(self):
        node = self.builder.create_compute_node('cn1')
        resp = self.placement_request(
            'GET', '/allocation_candidates?resources=VCPU:1&in_tree=%s'
            % node.uuid, version='1.30')
        self.assertEqual(400, resp.status_code)

    def test_builder_works_at_cap(self):
        self.assertEqual((1, 30), self.builder.microversion)
        uuids = self.builder.build_background(3, traits=['CUSTOM_BG'])
        node = self.builder.create_compute_node('cn1')
        self.builder.fill(node.uuid, 'VCPU')
        found = self.builder.get(
            '/resource_providers?required=CUSTOM_BG')['resource_providers']
        self.assertEqual(set(uuids), {rp['uuid'] for rp in found})

    def test_cap_can_change_while_running(self):
        self.server.max_microversion = None
        doc = requests.get(self.endpoint + '/', timeout=10).json()
        self.assertEqual(microversion.max_version_string(),
                         doc['versions'][0]['max_version'])
        self.assertEqual(200, self.placement_request(
            'GET', '/resource_providers', version='1.39').status_code)
        self.server.max_microversion = '1.17'
        self.assertEqual(406, self.placement_request(
            'GET', '/resource_providers', version='1.18').status_code)


class TestMiddlewareHook(base.FunctionalTestCase):

    def placement_middleware(self):
        def wrap(app):
            def faulty(environ, start_response):
                if environ['PATH_INFO'].endswith('/traits'):
                    body = json.dumps({'errors': [{'status': 503}]})
                    start_response('503 Service Unavailable',
                                   [('Content-Type', 'application/json')])
                    return [body.encode('utf-8')]
                return app(environ, start_response)
            return faulty
        return wrap

    def test_fault_injected_and_recorded(self):
        node = self.builder.create_compute_node('cn1')
        self.server.reset_recorder()
        resp = self.placement_request(
            'GET', '/resource_providers/%s/traits' % node.uuid)
        self.assertEqual(503, resp.status_code)
        self.assertEqual(
            [('GET', '/resource_providers/%s/traits' % node.uuid)],
            self.server.recorder)
        self.assertEqual(200, self.placement_request(
            'GET', '/resource_providers/%s' % node.uuid).status_code)
