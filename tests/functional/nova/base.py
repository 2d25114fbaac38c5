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
"""A base for tests that run the real nova (API, conductor, scheduler,
a fake-driver compute and an in-process placement) with nova-image-traits.

:class:`HarnessMixin` fixes what nova's functional harness gets wrong for
an out-of-tree plugin that talks to placement with keystoneauth (and, in
its command line tools, openstacksdk):

* nova looks for ``api-paste.ini`` under ``site-packages/etc/nova``; the
  wheel installs it under ``<prefix>/etc/nova``, so ``[wsgi]
  api_paste_config`` is pointed at the real file;
* nova's ``OpenStackSDKFixture`` turns every placement proxy into a bare
  session client with a mocked ``get_endpoint``, which breaks SDK clients;
  it is replaced by :class:`OpenStackSDKFixture`, which only blocks the
  host network probe that openstacksdk makes;
* nova's ``PlacementFixture`` serves placement through wsgi-intercept at a
  random URL and patches only nova's report client; ``[placement]`` is set
  so that every keystoneauth/openstacksdk client, ours included, reaches
  that URL (wsgi-intercept intercepts any ``requests`` session).
"""

import copy
import importlib.metadata
import os
import sys
import time

import fixtures
from keystoneauth1 import loading as ks_loading
from openstack.cloud import _utils as sdk_cloud_utils
from oslo_utils import uuidutils
from placement.tests.functional.fixtures import placement as placement_fx

import nova.conf
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional import integrated_helpers

from nova_image_traits.api import nodes as nit_nodes
from nova_image_traits import conf as nit_conf

CONF = nova.conf.CONF

FILTER_PATH = 'nova_image_traits.filters.image_traits_filter.ImageTraitsFilter'
FILTER_NAME = 'ImageTraitsFilter'
#: The nova-api pre-check's paste filter, as the docs tell deployers.
PRECHECK_FILTER = 'image_traits_precheck'
PRECHECK_FACTORY = 'nova_image_traits.api.precheck:RebuildPrecheck.factory'

#: The nested fake driver: ``<host>-child`` holds CUSTOM_MAGIC inventory.
NESTED_DRIVER = 'fake.MediumFakeDriverWithNestedCustomResources'
CHILD_RESOURCE = 'CUSTOM_MAGIC'

_API_PASTE = os.path.join('etc', 'nova', 'api-paste.ini')


def find_api_paste_config():
    """Return the path of the ``api-paste.ini`` the nova wheel installed."""
    try:
        files = importlib.metadata.files('nova') or ()
    except importlib.metadata.PackageNotFoundError:
        files = ()
    for entry in files:
        if str(entry).endswith(_API_PASTE):
            path = os.path.realpath(str(entry.locate()))
            if os.path.exists(path):
                return path
    for prefix in (sys.prefix, sys.base_prefix, '/usr/local', '/'):
        path = os.path.join(prefix, _API_PASTE)
        if os.path.exists(path):
            return path
    raise RuntimeError('Cannot find nova\'s %s; is nova installed?'
                       % _API_PASTE)


class OpenStackSDKFixture(fixtures.Fixture):
    """Replace nova's ``OpenStackSDKFixture`` with the one mock we need.

    Nova's fixture swaps the placement and accelerator proxies for bare
    session clients and mocks ``Proxy.get_endpoint``, so that SDK proxy
    methods fail with "'Proxy' object has no attribute ...". All the tests
    here need is that creating a ``Connection`` does not probe the host's
    network interfaces (``psutil.net_if_addrs``, poisoned by nova's tests).
    """

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatchObject(
            sdk_cloud_utils, 'localhost_supports_ipv6', return_value=False))


class HarnessMixin:
    """Make nova's functional harness fit nova-image-traits.

    Mix it in before a nova functional test base class.
    """

    #: Enable ``ImageTraitsFilter`` in the scheduler before it starts.
    ENABLE_IMAGE_TRAITS_FILTER = False
    #: Add the nova-api pre-check to nova's api-paste.ini pipelines.
    ENABLE_API_PRECHECK = False

    def api_paste_config(self):
        """nova's api-paste.ini, with the pre-check when enabled."""
        path = find_api_paste_config()
        if not self.ENABLE_API_PRECHECK:
            return path
        with open(path) as f:
            text = f.read()
        self.assertIn(' keystonecontext ', text)
        text = text.replace(' keystonecontext ',
                            ' keystonecontext %s ' % PRECHECK_FILTER)
        text += '\n[filter:%s]\npaste.filter_factory = %s\n' % (
            PRECHECK_FILTER, PRECHECK_FACTORY)
        copy = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'api-paste.ini')
        with open(copy, 'w') as f:
            f.write(text)
        return copy

    def setUp(self):
        super().setUp()
        nit_conf.register_opts(CONF)
        # NOTE(founders): every test's cloud names its compute nodes alike,
        # with new UUIDs: the pre-check remembers none of another test's,
        # as a nova-api process started for this cloud would not.
        nit_nodes.forget()

    def useFixture(self, fixture):
        # NOTE(founders): nova's TestCase.setUp and the test base classes
        # create these fixtures in the middle of their setUp, between which the
        # services start; intercepting them here is the one place that is
        # always before the API starts and right after placement is up.
        if type(fixture) is nova_fixtures.OpenStackSDKFixture:
            fixture = OpenStackSDKFixture()
        if isinstance(fixture, nova_fixtures.OSAPIFixture):
            self.flags(api_paste_config=self.api_paste_config(),
                       group='wsgi')
        result = super().useFixture(fixture)
        if isinstance(fixture, placement_fx.PlacementFixture):
            self._point_placement_at(fixture)
        return result

    def _point_placement_at(self, fixture):
        """Make every ``[placement]`` client reach ``fixture``."""
        plugin = ks_loading.get_plugin_loader('admin_token')
        # NOTE(founders): keystoneauth registers the options of an auth plugin
        # only when it loads it; register them first so they can be set.
        CONF.register_opts(ks_loading.get_auth_plugin_conf_options(plugin),
                           group='placement')
        self.flags(auth_type='admin_token', endpoint=fixture.endpoint,
                   token=fixture.token, endpoint_override=fixture.endpoint,
                   group='placement')
        # NOTE(founders): no reset of the engine's clients here: they are
        # cached per effective [placement] settings, so this test's endpoint
        # gets its own client, as it would after a reload in production.

    def start_service(self, name, *args, **kwargs):
        if name == 'scheduler' and self.ENABLE_IMAGE_TRAITS_FILTER:
            self.enable_image_traits_filter()
        return super().start_service(name, *args, **kwargs)

    def enable_image_traits_filter(self):
        """Add ``ImageTraitsFilter`` to the scheduler's filters.

        Must be called before the scheduler starts.
        """
        available = list(CONF.filter_scheduler.available_filters)
        if FILTER_PATH not in available:
            available.append(FILTER_PATH)
        enabled = list(CONF.filter_scheduler.enabled_filters)
        if FILTER_NAME not in enabled:
            enabled.append(FILTER_NAME)
        self.flags(available_filters=available, enabled_filters=enabled,
                   group='filter_scheduler')

    def set_image_traits_opts(self, **kwargs):
        """Set ``[image_traits]`` options for the rest of the test."""
        self.flags(group='image_traits', **kwargs)


class ImageTraitsTestBase(HarnessMixin,
                          integrated_helpers.ProviderUsageBaseTestCase):
    """Real nova services plus helpers for rebuild-with-traits scenarios.

    Nothing is started beyond the conductor and the scheduler; call
    :meth:`start_nested_compute`.
    """

    compute_driver = NESTED_DRIVER

    #: Seconds between two polls of a server.
    POLL_INTERVAL = 0.1
    #: Seconds to wait for a server to settle.
    POLL_TIMEOUT = 60.0

    def start_nested_compute(self, host):
        """Start a compute whose node has a ``<host>-child`` provider.

        :returns: ``(root_rp_uuid, child_rp_uuid)``
        """
        self._start_compute(host)
        root = self._get_provider_uuid_by_host(host)
        child = self._get_provider_uuid_by_name(host + '-child')
        return root, child

    def set_traits(self, rp_uuid, traits):
        """Replace the traits of a provider (keeping nova's own markers)."""
        for trait in traits:
            if trait.startswith('CUSTOM_'):
                self.placement.put('/traits/%s' % trait, None,
                                   version='1.6')
        resp = self._set_provider_traits(rp_uuid, list(traits))
        self.assertEqual(200, resp.status, resp.body)

    def add_sibling(self, name=None):
        """Add a provider beside ``<host>-child``, as another driver would.

        It has its own ``CUSTOM_MAGIC`` inventory, so a boot could use it
        too; the server already booted does not hold it.

        :returns: the new provider's UUID
        """
        parent = self.placement.get(
            '/resource_providers/%s' % self.child, version='1.14').body
        resp = self.placement.post(
            '/resource_providers',
            {'name': name or '%s-sibling' % self.child,
             'parent_provider_uuid': parent['parent_provider_uuid']},
            version='1.20')
        self.assertEqual(200, resp.status, resp.body)
        sibling = resp.body['uuid']
        resp = self.placement.put(
            '/resource_providers/%s/inventories' % sibling,
            {'resource_provider_generation': resp.body['generation'],
             'inventories': {CHILD_RESOURCE: {'total': 4}}})
        self.assertEqual(200, resp.status, resp.body)
        return sibling

    def create_image(self, required=(), forbidden=(), name=None,
                     **properties):
        """Create an image in nova's fake glance.

        :param required: traits to set as ``trait:<NAME>=required``
        :param forbidden: traits to set as ``trait:<NAME>=forbidden`` (nova
            ignores that value on images)
        :param properties: more image properties
        :returns: the image id
        """
        image = copy.deepcopy(self.glance.image1)
        image_id = uuidutils.generate_uuid()
        image['id'] = image_id
        image['name'] = name or 'image-%s' % image_id[:8]
        props = dict(image.get('properties', {}))
        props.update({'trait:%s' % t: 'required' for t in required})
        props.update({'trait:%s' % t: 'forbidden' for t in forbidden})
        props.update(properties)
        image['properties'] = props
        self.glance.create(None, image)
        return image_id

    def create_flavor(self, extra_specs=None, vcpu=1, memory_mb=512,
                      disk=1):
        """Create a small flavor with ``extra_specs``; return its id."""
        return self._create_flavor(
            vcpu=vcpu, memory_mb=memory_mb, disk=disk, ephemeral=0,
            extra_spec=extra_specs)

    def boot(self, flavor_id, image_id, host=None):
        """Boot a server and wait for it to be ACTIVE."""
        server = self._build_server(image_uuid=image_id, flavor_id=flavor_id,
                                    networks='none', host=host)
        server = self.api.post_server({'server': server})
        server = self.wait_until_settled(server)
        self.assertEqual('ACTIVE', server['status'],
                         self.fault_message(server))
        return server

    def fill_host(self, rp_uuid, resource_class='VCPU'):
        """Leave no free ``resource_class`` on the provider.

        Nova's ``_set_inventory`` POSTs one inventory and cannot replace an
        existing one (a 409 it does not check); replace it with a PUT.
        """
        usages = self._get_provider_usages(rp_uuid)
        used = usages.get(resource_class, 0)
        self.assertGreater(used, 0, 'fill_host needs a server on the host')
        provider = self.placement.get(
            '/resource_providers/%s' % rp_uuid).body
        resp = self.placement.put(
            '/resource_providers/%s/inventories/%s' % (
                rp_uuid, resource_class),
            {'resource_provider_generation': provider['generation'],
             'total': used, 'reserved': 0, 'min_unit': 1, 'max_unit': used,
             'step_size': 1, 'allocation_ratio': 1.0})
        self.assertEqual(200, resp.status, resp.body)
        # The host is full: a boot asking for this class cannot land on it.
        resp = self.placement.get(
            '/allocation_candidates?resources=%s:1&in_tree=%s' % (
                resource_class, rp_uuid), version='1.31')
        self.assertEqual([], resp.body['allocation_requests'])

    def rebuild(self, server, image_id):
        """Rebuild ``server`` with ``image_id``; wait until it settles.

        :returns: the server as :meth:`wait_until_settled` returns it
        """
        self.api.post_server_action(
            server['id'], {'rebuild': {'imageRef': image_id}})
        return self.wait_until_settled(server)

    def wait_until_settled(self, server):
        """Poll ``server`` until no task runs and it is ACTIVE or ERROR.

        An ERROR server is returned once its fault is recorded (nova sets
        the state before it writes the fault).
        """
        deadline = time.monotonic() + self.POLL_TIMEOUT
        while True:
            server = self.admin_api.get_server(server['id'])
            settled = (server['OS-EXT-STS:task_state'] is None and
                       server['status'] in ('ACTIVE', 'ERROR'))
            if settled and (server['status'] != 'ERROR' or
                            'fault' in server):
                return server
            if time.monotonic() > deadline:
                self.fail('Server %s did not settle: %s'
                          % (server['id'], server))
            time.sleep(self.POLL_INTERVAL)

    @staticmethod
    def fault_message(server):
        """The fault's message: what everyone who sees the server reads."""
        return server.get('fault', {}).get('message', '')

    @staticmethod
    def fault_reason(server):
        """The refusal as an admin reads it, with the host's detail.

        The conductor hook's refusal names the host's detail in the
        fault's ``details`` only (nova's formatted exception, shown to
        admins), on its last line; any other fault has just its message.
        ``server`` must be read by an admin (:meth:`wait_until_settled`).
        """
        fault = server.get('fault', {})
        marker = 'ImageTraitsRefused: '
        details = fault.get('details', '')
        if marker in details:
            return details.rsplit(marker, 1)[1].strip()
        return fault.get('message', '')
