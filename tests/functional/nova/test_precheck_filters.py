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
"""The pre-check runs nova's rebuild filters for the server's own host.

``[image_traits] precheck_scheduler_filters``: nova's scheduler runs
``ImagePropertiesFilter`` (in nova's default ``enabled_filters``) and here
``AggregateImagePropertiesIsolation`` too, and so does the pre-check, with
the same ``[filter_scheduler]``. The fake driver's host supports x86_64
``fake`` instances only; host1 is in an aggregate whose metadata says
``os_distro=linux``.
"""

import collections

import fixtures
from sqlalchemy import engine as sa_engine
from sqlalchemy import event

from nova import objects
from nova.scheduler import filters as nova_filters
from nova.scheduler.filters import image_props_filter

from nova_image_traits.api import host_filters
from nova_image_traits.filters import image_traits_filter
from nova_image_traits import reasons
from nova_image_traits.reasons import scheduler_filter
from tests.functional.nova import base
from tests.functional.nova import test_precheck

GOLD = test_precheck.GOLD
ISOLATION = 'AggregateImagePropertiesIsolation'
#: This module's test filters, for [filter_scheduler] available_filters.
_HERE = __name__


class RaisingFilter(nova_filters.BaseHostFilter):
    """A rebuild filter with a bug."""

    RUN_ON_REBUILD = True

    def host_passes(self, host_state, spec_obj):
        raise RuntimeError('a bug in a filter')


class InstancesFilter(nova_filters.BaseHostFilter):
    """A rebuild filter of another project's, which reads the instances."""

    RUN_ON_REBUILD = True
    seen = []

    def host_passes(self, host_state, spec_obj):
        InstancesFilter.seen.append(sorted(host_state.instances))
        return True


class _FiltersBase(test_precheck._PrecheckBase):

    ENABLE_IMAGE_TRAITS_FILTER = True

    def start_service(self, name, *args, **kwargs):
        if name == 'scheduler':
            self._enable([ISOLATION])
        return super().start_service(name, *args, **kwargs)

    def _enable(self, names, available=(), first=False):
        opts = base.CONF.filter_scheduler
        enabled = list(opts.enabled_filters)
        enabled = names + enabled if first else enabled + names
        self.flags(enabled_filters=enabled,
                   available_filters=(list(opts.available_filters) +
                                      list(available)),
                   group='filter_scheduler')

    def setUp(self):
        super().setUp()
        aggregate = self.admin_api.post_aggregate(
            {'aggregate': {'name': 'linux'}})
        self.admin_api.add_host_to_aggregate(aggregate['id'],
                                             test_precheck.HOST)
        self.admin_api.post_aggregate_action(aggregate['id'], {
            'set_metadata': {'metadata': {'os_distro': 'linux'}}})
        self.before = self._read_back()

    def count_calls(self, calls):
        """Count the calls of ``(owner, name)`` methods, by name."""
        counts = {}
        for owner, name in calls:
            real = getattr(owner, name)
            key = '%s.%s' % (owner.__name__, name)

            # A class method read from its class, or a method: either way
            # the arguments pass on as they came.
            def counted(*args, _real=real, _key=key, **kwargs):
                counts[_key] = counts.get(_key, 0) + 1
                return _real(*args, **kwargs)
            self.useFixture(fixtures.MockPatchObject(owner, name, counted))
        return counts

    def assert_refused_by(self, image, name):
        resp = self._rebuild_refused(image, api=self.admin_api)
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertIn(name, resp.json()['badRequest']['message'])
        self.assertEqual(self.before, self._read_back())
        self.assertRegex(
            self.stdlog.logger.output,
            'outcome=reject allowed=False .*instance=%s .*cause=%s '
            '.*detail=%s refused host host1' % (
                self.server['id'], scheduler_filter.CAUSE, name))
        return resp


class PrecheckFiltersOnTest(_FiltersBase):

    def setUp(self):
        super().setUp()
        self.set_image_traits_opts(precheck_scheduler_filters=True)

    def test_image_properties_filter_refuses_with_a_400(self):
        for props in ({'hw_architecture': 'aarch64'},
                      {'img_hv_type': 'kvm'}):
            with self.subTest(**props):
                self.assert_refused_by(self.create_image(**props),
                                       'ImagePropertiesFilter')

    def test_not_run_for_the_same_image(self):
        # nova runs its rebuild filters for a new image only: the server's
        # own image, which changed in a way the strategy accepts, is not
        # refused by AggregateImagePropertiesIsolation.
        self.glance.images[self.old_image]['properties']['os_distro'] = (
            'windows')
        server = self.rebuild(self.server, self.old_image)
        self.assertEqual('ACTIVE', server['status'])
        self.assertIn('judged as a new image', self.stdlog.logger.output)
        self.assertNotIn(scheduler_filter.CAUSE, self.stdlog.logger.output)

    def test_aggregate_isolation_refuses_with_a_400(self):
        self.assert_refused_by(self.create_image(os_distro='windows'),
                               ISOLATION)

    def test_a_tenant_reads_no_filter(self):
        image = self.create_image(os_distro='windows')
        # NOTE(founders): this harness's self.api is an admin too.
        resp = self._rebuild_refused(image, api=self.api_fixture.api)
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertEqual(reasons.host_lacks(),
                         resp.json()['badRequest']['message'])
        self.assertEqual(self.before, self._read_back())

    def test_accepted_by_the_filters_goes_through(self):
        image = self.create_image(required=[GOLD], os_distro='linux',
                                  hw_architecture='x86_64')
        server = self.rebuild(self.server, image)
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual(image, server['image']['id'])

    def test_our_filter_runs_once_in_the_scheduler_only(self):
        calls = []
        real = image_traits_filter.ImageTraitsFilter.host_passes

        def host_passes(self_, host_state, spec_obj):
            calls.append(spec_obj.image.id)
            return real(self_, host_state, spec_obj)
        self.useFixture(fixtures.MockPatchObject(
            image_traits_filter.ImageTraitsFilter, 'host_passes',
            host_passes))
        refused = self.create_image(required=[GOLD], os_distro='windows')
        self.assert_refused_by(refused, ISOLATION)
        self.assertEqual([], calls)
        image = self.create_image(required=[GOLD])
        self.assertEqual('ACTIVE', self.rebuild(self.server, image)['status'])
        self.assertEqual([image], calls)

    def test_a_filter_that_raises_lets_nova_decide(self):
        # Enabled for the pre-check only: the scheduler loaded its filters
        # when it started.
        self._enable(['RaisingFilter'], ['%s.RaisingFilter' % _HERE],
                     first=True)
        image = self.create_image(hw_architecture='aarch64')
        server = self.rebuild(self.server, image)
        self.assertIn('RaisingFilter raised RuntimeError: a bug in a filter',
                      self.stdlog.logger.output)
        self.assertIn('nova goes on and its scheduler runs them',
                      self.stdlog.logger.output)
        # nova's scheduler refuses it: what the switch off does.
        self.assertEqual('ERROR', server['status'])
        self.assertIn('No valid host', self.fault_message(server))

    def test_a_filter_that_cannot_be_loaded_lets_nova_decide(self):
        self._enable(['NoSuchFilter'])
        image = self.create_image(required=[GOLD])
        server = self.rebuild(self.server, image)
        self.assertEqual('ACTIVE', server['status'])
        self.assertIn('NoSuchFilter not found in [filter_scheduler] '
                      'available_filters', self.stdlog.logger.output)

    def test_a_filter_of_another_project_reads_the_instances(self):
        InstancesFilter.seen = []
        self._enable(['InstancesFilter'], ['%s.InstancesFilter' % _HERE])
        # nova-api alone: one more read, in the server's cell, whose
        # context nova-api holds already.
        self.stub_out('nova.conductor.api.ComputeTaskAPI.rebuild_instance',
                      lambda *args, **kwargs: None)
        reads = self.count_calls(((objects.InstanceList, 'get_by_host'),
                                  (objects.CellMapping, 'get_by_uuid')))
        image = self.create_image(required=[GOLD])
        self.api.post_server_action(self.server['id'],
                                    {'rebuild': {'imageRef': image}})
        self.assertEqual([[self.server['id']]], InstancesFilter.seen)
        self.assertEqual({'InstanceList.get_by_host': 1}, reads)

    def test_names_verified(self):
        host_filters.verify()


class PrecheckFiltersOffTest(_FiltersBase):
    """The switch off: nova's scheduler refuses, and the server is in ERROR."""

    def _assert_nova_refuses(self, image):
        server = self.rebuild(self.server, image)
        self.assertEqual('ERROR', server['status'])
        self.assertIn('No valid host', self.fault_message(server))
        self.assertNotIn(scheduler_filter.CAUSE, self.stdlog.logger.output)

    def test_image_properties_filter_refuses_in_the_scheduler(self):
        self._assert_nova_refuses(self.create_image(hw_architecture='aarch64'))

    def test_aggregate_isolation_refuses_in_the_scheduler(self):
        self._assert_nova_refuses(self.create_image(os_distro='windows'))


class PrecheckFiltersCostTest(_FiltersBase):
    """What the switch costs one accepted rebuild, in nova-api alone."""

    READS = ((objects.ComputeNode, 'get_by_host_and_nodename'),
             (objects.AggregateList, 'get_by_host'),
             (objects.InstanceList, 'get_by_host'),
             (image_props_filter.ImagePropertiesFilter, 'host_passes'))

    def test_one_database_query(self):
        # The cast to the conductor does nothing: only nova-api counts, and
        # no periodic task runs in nova's harness.
        self.stub_out('nova.conductor.api.ComputeTaskAPI.rebuild_instance',
                      lambda *args, **kwargs: None)
        counts = self.count_calls(self.READS)
        statements = []

        def executed(conn, cursor, statement, *args):
            statements.append(' '.join(statement.split()))
        event.listen(sa_engine.Engine, 'before_cursor_execute', executed)
        self.addCleanup(event.remove, sa_engine.Engine,
                        'before_cursor_execute', executed)
        found, sql = [], []
        for switch in (False, True):
            self.set_image_traits_opts(precheck_scheduler_filters=switch)
            self.server = self.boot(self.flavor, self.old_image)
            image = self.create_image(required=[GOLD])
            counts.clear()
            del statements[:]
            self.api.post_server_action(self.server['id'],
                                        {'rebuild': {'imageRef': image}})
            found.append(dict(counts))
            sql.append(collections.Counter(statements))
        off, on = found
        self.assertEqual({'ComputeNode.get_by_host_and_nodename': 1}, off)
        self.assertEqual({'ComputeNode.get_by_host_and_nodename': 1,
                          'AggregateList.get_by_host': 1,
                          'ImagePropertiesFilter.host_passes': 1}, on)
        # Every database (nova's API and cell databases, placement's): one
        # read transaction more, one SELECT of the host's aggregates.
        more = sorted((sql[1] - sql[0]).elements())
        self.assertEqual([], list((sql[0] - sql[1]).elements()))
        self.assertEqual(2, len(more), more)
        self.assertEqual('BEGIN', more[0])
        self.assertRegex(more[1], r'^SELECT .* FROM aggregates JOIN '
                         r'aggregate_hosts .* WHERE aggregate_hosts.host = ')
