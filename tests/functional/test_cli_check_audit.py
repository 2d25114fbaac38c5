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
"""``nova-image-traits check`` and ``audit`` against real nova and placement.

What runs, and what stands in for what:

* **nova**: its real API, conductor, scheduler and a fake-driver compute,
  in this process (nova's functional harness, through
  :mod:`tests.functional.nova.base`). Servers are really booted.
* **placement**: the real placement application with an in-memory database
  (placement's ``PlacementFixture``), reached through wsgi-intercept.
* **Glance**: no image service can run here (Glance is not installed and
  would need its own database, store and API server), so nova's
  ``GlanceFixture`` stands in, as in all of nova's functional tests. The
  commands see it only through nova's image proxy API (``GET /images/{id}``
  at compute microversion 2.35): the connection's catalog has no image
  service, so ``--image-source auto`` chooses that API, which is what the
  commands do on any cloud whose catalog lacks Glance. The image service
  path (``conn.image``) is therefore not exercised here.
* **keystone**: none. A keystoneauth plugin serves a two-entry catalog
  (compute and placement at their wsgi-intercept URLs) and the headers that
  nova's stubbed auth middleware and placement's ``noauth2`` read.

The commands get a real ``openstack.connection.Connection`` built on that
session; everything they do goes over (intercepted) HTTP.
"""

import io
import json
import os
import socket
import tempfile

import fixtures
from keystoneauth1 import plugin as ks_plugin
from keystoneauth1 import session as ks_session
import openstack.connection

import nova.conf
from nova.tests import fixtures as nova_fixtures

from nova_image_traits.cmd import cli as cli_main
from nova_image_traits.conf import image_traits
from tests.functional.nova import base

CONF = nova.conf.CONF
AVX2 = 'HW_CPU_X86_AVX2'
GOLD = 'CUSTOM_GOLD'


class HarnessAuth(ks_plugin.BaseAuthPlugin):
    """A static catalog and the harness's admin credentials.

    :param endpoints: service type to URL; other services are absent
    """

    def __init__(self, endpoints, roles='reader,member,admin',
                 user='admin'):
        super().__init__()
        self._endpoints = endpoints
        self._roles = roles
        self._user = user

    def get_headers(self, session, **kwargs):
        return {'X-Auth-Token': self._user, 'X-Auth-User': self._user,
                'X-Auth-Project-Id': nova_fixtures.PROJECT_ID,
                'X-Roles': self._roles}

    def get_endpoint_data(self, session, *, endpoint_override=None,
                          discover_versions=True, service_type=None,
                          **kwargs):
        url = endpoint_override or self._endpoints.get(service_type)
        if not url:
            return None
        return super().get_endpoint_data(
            session, endpoint_override=url,
            discover_versions=discover_versions, **kwargs)


class CLITestBase(base.ImageTraitsTestBase):
    """Two nested hosts, and the commands run against them."""

    def setUp(self):
        super().setUp()
        # The audit test boots 12 servers; nova's default quota is 10.
        self.flags(instances=20, group='quota')
        self.root1, self.child1 = self.start_nested_compute('host1')
        self.root2, self.child2 = self.start_nested_compute('host2')
        self.placement_url = CONF.placement.endpoint_override
        session = ks_session.Session(auth=HarnessAuth({
            'compute': self.api_fixture.base_url,
            'placement': self.placement_url}))
        self.conn = openstack.connection.Connection(session=session)
        self.addCleanup(self.conn.close)
        # Every request the commands send to placement, as sent.
        self.sent = []
        session.session.hooks['response'].append(self._record)
        self.small = self.create_flavor()

    def _record(self, resp, *args, **kwargs):
        if resp.request.url.startswith(self.placement_url):
            self.sent.append((resp.request.method,
                              resp.request.url[len(self.placement_url):]))

    def cli(self, *argv):
        """Run the command in this process; return (rc, stdout, stderr)."""
        out, err = io.StringIO(), io.StringIO()
        rc = cli_main.main(list(argv), connection=self.conn, stdout=out,
                           stderr=err)
        return rc, out.getvalue(), err.getvalue()

    def cli_json(self, *argv):
        rc, out, err = self.cli(*(argv + ('-f', 'json')))
        try:
            return rc, json.loads(out), err
        except ValueError:
            self.fail('not JSON (rc %s): %r; stderr: %s' % (rc, out, err))

    def placement_gets(self):
        """Count the placement requests the command sent; all are GETs.

        openstacksdk's version discovery of the endpoint (a GET of the
        endpoint URL itself, once per connection) is not counted: it is
        the connection's, not the command's.
        """
        self.assertEqual(set(), {m for m, _u in self.sent} - {'GET'})
        return len([u for _m, u in self.sent if u])


class CheckAuditTest(CLITestBase):
    """Real servers on two nested hosts, judged by the commands."""

    # -- check -----------------------------------------------------------

    def test_check_allocated_child_every_strategy(self):
        self.set_traits(self.root1, [AVX2])
        self.set_traits(self.child1, [GOLD])
        magic = self.create_flavor(
            extra_specs={'resources1:%s' % base.CHILD_RESOURCE: '1'})
        server = self.boot(magic, self.glance.image1['id'], host='host1')
        before = self._get_allocations_by_server_uuid(server['id'])
        self.assertIn(self.child1, before)
        image = self.create_image(required=[GOLD])

        rc, rows, err = self.cli_json('check', server['id'], '--image', image,
                                      '--strategy', 'all')

        # Some strategies refuse: exit code 3.
        self.assertEqual(3, rc, err)
        by = {r['Strategy']: r for r in rows}
        self.assertEqual(
            {'held_providers': 'reject', 'reject': 'reject',
             'root_traits': 'reject', 'tree_traits': 'accept',
             'in_tree_candidates': 'reject', 'allocation_traits': 'accept'},
            {name: r['Outcome'] for name, r in by.items()})
        self.assertEqual(GOLD, by['root_traits']['Missing'])
        self.assertEqual(GOLD, by['root_traits']['Required'])
        self.assertIn("missing on this server's compute node",
                      by['root_traits']['Reason'])
        # The cause and the detail are shown without -v.
        self.assertEqual('traits-missing', by['root_traits']['Cause'])
        self.assertIn('Detail', by['root_traits'])
        self.assertEqual('-', by['tree_traits']['Cause'])
        self.assertEqual(0, by['reject']['Requests'])
        self.assertGreater(by['tree_traits']['Requests'], 0)
        # Read-only: one provider lookup and the decisions, all GETs.
        self.assertEqual(1 + sum(r['Requests'] for r in rows),
                         self.placement_gets())
        self.assertIn(('GET', '/resource_providers?name=host1'), self.sent)
        server = self.admin_api.get_server(server['id'])
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual(self.glance.image1['id'], server['image']['id'])
        self.assertEqual(
            before, self._get_allocations_by_server_uuid(server['id']))

    def test_check_by_name_with_configured_strategy(self):
        self.set_traits(self.root1, [AVX2])
        server = self.boot(self.small, self.glance.image1['id'],
                           host='host1')
        self.create_image(required=[AVX2], name='avx2-image')
        with tempfile.NamedTemporaryFile('w', suffix='.conf',
                                         delete=False) as f:
            f.write('[image_traits]\nstrategy = root_traits\n')
        self.addCleanup(os.unlink, f.name)

        rc, rows, err = self.cli_json('check', server['name'], '--image',
                                      'avx2-image', '--config-file', f.name)

        self.assertEqual(0, rc, err)
        self.assertIn('configuration: %s; strategy root_traits' % f.name,
                      err)
        self.assertEqual([('root_traits', 'accept', True)],
                         [(r['Strategy'], r['Outcome'], r['Allowed'])
                          for r in rows])

        rc, rows, err = self.cli_json('check', server['name'], '--image',
                                      'avx2-image')
        self.assertEqual(['held_providers'],
                         [r['Strategy'] for r in rows])
        self.assertEqual('accept', rows[0]['Outcome'])

    def test_check_same_image_is_not_checked(self):
        self.set_traits(self.root1, [])
        image = self.create_image(required=[AVX2])
        server = self.boot(self.small, self.glance.image1['id'],
                           host='host1')
        # The current image would fail every strategy but is not judged.
        self.glance.update(None, self.glance.image1['id'], {
            'properties': {'trait:%s' % AVX2: 'required'}})
        del self.sent[:]

        rc, rows, err = self.cli_json('check', server['id'], '--image',
                                      self.glance.image1['id'])

        self.assertEqual(0, rc, err)
        self.assertEqual([('held_providers', 'not checked', True)],
                         [(r['Strategy'], r['Outcome'], r['Allowed'])
                          for r in rows])
        self.assertIn('not checked: same image', rows[0]['Reason'])
        self.assertEqual(0, self.placement_gets())

        rc, rows, err = self.cli_json('check', server['id'], '--image',
                                      image, '--strategy', 'root_traits')
        self.assertEqual(3, rc, err)
        self.assertEqual('reject', rows[0]['Outcome'])

    def test_check_unknown_server_fails_cleanly(self):
        rc, out, err = self.cli('check', 'no-such-server', '--image',
                                self.glance.image1['id'])
        self.assertEqual(1, rc)
        self.assertEqual('', out)
        self.assertIn('no-such-server', err)
        self.assertNotIn('Traceback', err)

    # -- audit -----------------------------------------------------------

    def _boot_many(self, image, per_host):
        servers = {}
        for host in ('host1', 'host2'):
            servers[host] = [self.boot(self.small, image, host=host)['id']
                             for _i in range(per_host)]
        return servers

    def test_audit_requests_grow_with_hosts_not_servers(self):
        self.set_traits(self.root1, [AVX2])
        self.set_traits(self.root2, [AVX2])
        image = self.create_image(required=[AVX2])
        servers = self._boot_many(image, per_host=6)
        # The trait disappears from host2 after its servers booted.
        self.set_traits(self.root2, [])

        rc, rows, err = self.cli_json('audit', '--strategy', 'root_traits')

        self.assertEqual(1, rc, err)
        outcomes = {r['Server']: (r['Host'], r['Outcome']) for r in rows}
        self.assertEqual(12, len(outcomes))
        for host, expected in (('host1', 'accept'), ('host2', 'reject')):
            for uuid in servers[host]:
                self.assertEqual((host, expected), outcomes[uuid])
        self.assertEqual({AVX2}, {r['Missing'] for r in rows
                                  if r['Host'] == 'host2'})
        # Per host: one provider lookup and one decision (root traits),
        # shared by its 6 servers: 4 requests for 12 servers.
        self.assertEqual(2 * 2, self.placement_gets())
        self.assertIn('12 servers on 2 nodes: 6 failed', err)
        self.assertIn('2 decisions made, 10 shared; 4 placement requests',
                      err)

        # allocation_traits decides per server, from each server's own
        # allocations, but those are indexed once per node: per host, the
        # provider lookup, the tree, its aggregates, the allocations of
        # its two providers (root and child) and the root's traits: 12
        # requests for 12 servers, as many as for one server per host.
        del self.sent[:]
        rc, rows, err = self.cli_json('audit', '--strategy',
                                      'allocation_traits')
        self.assertEqual(1, rc, err)
        for row in rows:
            self.assertEqual(
                'accept' if row['Host'] == 'host1' else 'reject',
                row['Outcome'])
        self.assertEqual(2 * (1 + 1 + 1 + 2 + 1), self.placement_gets())
        self.assertNotIn('/allocations/', ' '.join(u for _m, u in self.sent))
        self.assertIn('12 decisions made, 0 shared; 12 placement requests',
                      err)

    def test_audit_host_filter_progress_and_success(self):
        self.set_traits(self.root1, [AVX2])
        self.set_traits(self.root2, [AVX2])
        image = self.create_image(required=[AVX2])
        servers = self._boot_many(image, per_host=3)

        rc, rows, err = self.cli_json('audit', '--host', 'host1',
                                      '--strategy', 'all',
                                      '--progress-every', '1')

        self.assertEqual(0, rc, err)
        self.assertEqual(set(servers['host1']), {r['Server'] for r in rows})
        self.assertEqual(3 * len(image_traits.STRATEGIES), len(rows))
        # The current image passes every strategy, reject included: its
        # traits were checked at boot.
        self.assertEqual({'accept'}, {r['Outcome'] for r in rows})
        self.assertIn('audit: 1/3 servers checked, 0 failed', err)
        self.assertIn('audit: 2/3 servers checked', err)
        self.assertIn('3 servers on 1 nodes: 0 failed', err)
        self.assertNotIn('/resource_providers?name=host2',
                         [u for _m, u in self.sent])

    def test_audit_unknown_host_is_an_error(self):
        rc, out, err = self.cli('audit', '--host', 'hots1')
        self.assertEqual(2, rc, err)
        self.assertIn('No nova-compute service on host hots1', err)
        self.assertEqual('', out)

    def test_check_with_placement_down(self):
        sock = socket.socket()
        sock.bind(('127.0.0.1', 0))
        closed = 'http://127.0.0.1:%d/' % sock.getsockname()[1]
        sock.close()
        session = ks_session.Session(auth=HarnessAuth({
            'compute': self.api_fixture.base_url, 'placement': closed}))
        self.conn = openstack.connection.Connection(session=session)
        self.addCleanup(self.conn.close)
        server = self.boot(self.small, self.glance.image1['id'],
                           host='host1')
        plain = self.create_image()
        gold = self.create_image(required=[GOLD])

        # An image that requires no trait needs no placement.
        rc, rows, err = self.cli_json('check', server['id'], '--image',
                                      plain)
        self.assertEqual(0, rc, err)
        self.assertEqual('accept', rows[0]['Outcome'])

        rc, out, err = self.cli('check', server['id'], '--image', gold)
        self.assertEqual(1, rc, err)
        self.assertEqual('', out)
        lines = [line for line in err.splitlines()
                 if not line.startswith('check: configuration')]
        self.assertEqual(1, len(lines), err)
        self.assertIn('Placement is unreachable at %s' % closed, lines[0])
        self.assertIn('onnect', lines[0])
        self.assertNotIn('supported versions', err)

        # audit says it once, not once per server.
        self.boot(self.small, self.glance.image1['id'], host='host1')
        rc, out, err = self.cli('audit', '--strategy', 'root_traits')
        self.assertEqual(1, rc, err)
        self.assertEqual(1, err.count('Placement is unreachable'), err)
        self.assertNotIn('Cannot audit server', err)

    def _glance_down(self):
        def down(*args, **kwargs):
            raise RuntimeError('glance is down')
        for name in ('show', 'detail'):
            self.useFixture(fixtures.MonkeyPatch(
                'nova.tests.fixtures.GlanceFixture.%s' % name, down))

    def test_image_service_down_is_one_line_not_no_such_image(self):
        self.set_traits(self.root1, [AVX2])
        image = self.create_image(required=[AVX2])
        servers = [self.boot(self.small, image, host='host1')['id']
                   for _i in range(3)]
        self._glance_down()

        rc, out, err = self.cli('check', servers[0], '--image', image,
                                '--image-source', 'compute')
        self.assertEqual(1, rc, err)
        self.assertIn('HTTP 500', err)
        self.assertIn('may be down', err)
        self.assertNotIn('No image with name or ID', err)

        rc, out, err = self.cli('audit', '--strategy', 'root_traits')
        self.assertEqual(1, rc, err)
        self.assertEqual(1, err.count('HTTP 500'), err)
        self.assertNotIn('Cannot audit server', err)

    def test_audit_skips_a_server_whose_image_was_deleted(self):
        self.set_traits(self.root1, [AVX2])
        image = self.create_image(required=[AVX2])
        server = self.boot(self.small, image, host='host1')
        self.glance.delete(None, image)

        rc, rows, err = self.cli_json('audit', '--strategy', 'root_traits')

        self.assertEqual(0, rc, err)
        self.assertEqual([(server['id'], 'skipped')],
                         [(r['Server'], r['Outcome']) for r in rows])
        self.assertIn('was deleted', rows[0]['Reason'])
        self.assertIn('0 failed, 1 skipped', err)

    def test_audit_as_a_member_says_it_needs_an_administrator(self):
        session = ks_session.Session(auth=HarnessAuth({
            'compute': self.api_fixture.base_url,
            'placement': self.placement_url}, roles='reader,member',
            user='member'))
        self.conn = openstack.connection.Connection(session=session)
        self.addCleanup(self.conn.close)

        rc, out, err = self.cli('audit')

        self.assertEqual(2, rc, err)
        self.assertIn('needs an administrator', err)
        self.assertIn('403', err)

    def test_audit_does_not_count_unscheduled_servers_as_a_node(self):
        self.set_traits(self.root1, [AVX2])
        image = self.create_image(required=[AVX2])
        self.boot(self.small, image, host='host1')
        self.flags(cores=2000, group='quota')
        huge = self.create_flavor(vcpu=1000)
        server = self.api.post_server({'server': self._build_server(
            image_uuid=image, flavor_id=huge, networks='none')})
        server = self.wait_until_settled(server)
        self.assertEqual('ERROR', server['status'])

        rc, rows, err = self.cli_json('audit', '--strategy', 'root_traits')

        self.assertEqual(0, rc, err)
        self.assertEqual({'accept', 'skipped'},
                         {r['Outcome'] for r in rows})
        self.assertIn('2 servers on 1 nodes: 0 failed, 1 skipped', err)
