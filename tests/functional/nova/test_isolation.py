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
"""Hosts isolated for a trait, as nova's admin guide sets them up.

host1 is in an aggregate whose metadata requires ``CUSTOM_NIT_GOLD``, with
``[scheduler] enable_isolated_aggregate_filtering``. A boot of an image
that does not require it cannot land there, so neither may a rebuild to
one: with the conductor hook, with the scheduler filter alone, and with
the nova-api pre-check.
"""

from unittest import mock

from nova.scheduler import request_filter
from nova.tests.functional.api import client as api_client

from nova_image_traits.conductor import hook
from nova_image_traits import reasons
from tests.functional.nova import base

GOLD = 'CUSTOM_NIT_GOLD'
HOST = 'host1'


class _IsolationBase(base.ImageTraitsTestBase):
    """host1 isolated for GOLD, and a server booted there from a GOLD image."""

    def setUp(self):
        super().setUp()
        self.flags(enable_isolated_aggregate_filtering=True,
                   group='scheduler')
        self.root, _child = self.start_nested_compute(HOST)
        self.set_traits(self.root, [GOLD])
        aggregate = self.admin_api.post_aggregate(
            {'aggregate': {'name': 'gold'}})
        self.admin_api.add_host_to_aggregate(aggregate['id'], HOST)
        self.admin_api.post_aggregate_action(aggregate['id'], {
            'set_metadata': {'metadata': {'trait:%s' % GOLD: 'required'}}})
        # nova's API mirrors the membership into placement, where a boot
        # is judged.
        self.assertEqual([aggregate['uuid']],
                         self._get_provider_aggregates(self.root))
        self.flavor = self.create_flavor()
        self.gold_image = self.create_image(required=[GOLD])
        self.server = self.boot(self.flavor, self.gold_image)
        self.assertEqual(HOST, self.server['OS-EXT-SRV-ATTR:host'])

    def assert_refused(self, server):
        self.assertEqual('ERROR', server['status'])
        self.assertEqual(self.gold_image, server['image']['id'])
        self.assertIn('No valid host', self.fault_message(server))

    def assert_accepted(self, server, image):
        self.assertEqual('ACTIVE', server['status'],
                         self.fault_message(server))
        self.assertEqual(image, server['image']['id'])


class NovaAloneTest(_IsolationBase):
    """Without the package, nova runs no request filter on rebuild."""

    def test_plain_image_accepted_on_the_isolated_host(self):
        # Bug 1772523: what isolation keeps off host1 at boot, a rebuild
        # puts there.
        self.assertFalse(hook.is_installed())
        image = self.create_image()
        self.assert_accepted(self.rebuild(self.server, image), image)


class _Judged:
    """What every deployment of the package judges alike."""

    def test_rebuild_to_a_plain_image_is_refused(self):
        self.assert_refused(self.rebuild(self.server, self.create_image()))

    def test_rebuild_to_another_image_requiring_the_trait(self):
        image = self.create_image(required=[GOLD])
        self.assert_accepted(self.rebuild(self.server, image), image)

    def test_isolation_off_accepts_a_plain_image(self):
        self.flags(enable_isolated_aggregate_filtering=False,
                   group='scheduler')
        image = self.create_image()
        self.assert_accepted(self.rebuild(self.server, image), image)

    def test_flavor_requiring_the_trait_accepts_a_plain_image(self):
        flavor = self.create_flavor({'trait:%s' % GOLD: 'required'})
        server = self.boot(flavor, self.create_image())
        image = self.create_image()
        self.assert_accepted(self.rebuild(server, image), image)

    def test_every_strategy_refuses_a_plain_image(self):
        for strategy in ('reject', 'root_traits', 'allocation_traits'):
            with self.subTest(strategy=strategy):
                self.set_image_traits_opts(strategy=strategy,
                                           fallback_strategy=strategy)
                server = self.boot(self.flavor, self.gold_image)
                self.assert_refused(self.rebuild(server,
                                                 self.create_image()))


class IsolationWithConductorHookTest(_Judged, _IsolationBase):

    def setUp(self):
        hook.install()
        self.addCleanup(hook.uninstall)
        super().setUp()

    def test_refusal_names_no_aggregate(self):
        server = self.rebuild(self.server, self.create_image())
        self.assert_refused(server)
        # Everyone who sees the server reads the tenant's reason; an
        # admin reads why in the fault's details, without the trait.
        self.assertIn(reasons.host_lacks(), self.fault_message(server))
        detail = self.fault_reason(server)
        self.assertIn('reserved for images', detail)
        self.assertNotIn(GOLD, detail)

    def test_nova_asked_once_per_decision(self):
        # Never once per image property, as the attribution asks nova.
        image = self.create_image(required=[GOLD], hw_disk_bus='virtio',
                                  hw_video_model='virtio',
                                  hw_vif_model='virtio')
        with mock.patch.object(request_filter, 'isolate_aggregates',
                               wraps=request_filter.isolate_aggregates) as f:
            self.assert_accepted(self.rebuild(self.server, image), image)
        self.assertEqual(1, f.call_count)


class IsolationWithSchedulerFilterTest(_Judged, _IsolationBase):

    ENABLE_IMAGE_TRAITS_FILTER = True

    def setUp(self):
        super().setUp()
        self.assertFalse(hook.is_installed())


class IsolationWithPrecheckTest(_Judged, _IsolationBase):

    ENABLE_API_PRECHECK = True

    def rebuild_refused(self, image):
        exc = self.assertRaises(
            api_client.OpenStackApiException, self.api.post_server_action,
            self.server['id'], {'rebuild': {'imageRef': image}})
        return exc.response

    def test_refused_with_a_400_and_untouched(self):
        response = self.rebuild_refused(self.create_image())
        self.assertEqual(400, response.status_code)
        # An admin reads why (a tenant reads what it reads of a missing
        # trait: test_host_detail), without the aggregate's trait.
        self.assertIn('reserved for images', response.text)
        self.assertNotIn(GOLD, response.text)
        server = self.admin_api.get_server(self.server['id'])
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual(self.gold_image, server['image']['id'])

    # The pre-check alone refuses before nova: the rest is the hook's and the
    # filter's, above.
    test_rebuild_to_a_plain_image_is_refused = None
    test_every_strategy_refuses_a_plain_image = None
