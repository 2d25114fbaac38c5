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
"""What the cloud holds before any rebuild, made through its APIs.

The traits (``TRAITS``: compute1's root gets the gold one from nova's
``provider.yaml``, a child provider of compute2 the nested one, and the
absent one is on no provider), the flavor ``m1.nit``, the images (one
requiring each trait and a second, ``nit-gold2``, requiring the gold one,
a vTPM one, and ``nit-plain`` and ``nit-plain2`` requiring nothing) and
the servers ``nit-a`` (compute1), ``nit-b`` (compute2) and the
volume-backed ``nit-v`` (compute1), booted from the plain image by
``demo``, and ``nit-g`` (compute1), booted from the gold image for the
isolated-aggregate case (``isolation_case.py``); what cinder recorded of
``nit-v``'s root volume is checked in its database.
"""

import os

from processes import Failure

#: The trait each image of that name requires.
TRAITS = {'gold': 'CUSTOM_NIT_GOLD', 'nested': 'CUSTOM_NIT_NESTED',
          'absent': 'CUSTOM_NIT_ABSENT'}
#: The trait each image requires: the gold one twice, so that a server
#: of the gold image can be rebuilt to another that requires it.
IMAGE_TRAITS = dict(TRAITS, gold2=TRAITS['gold'])
PLACEMENT = ('--os-placement-api-version', '1.14')
#: Images whose properties nova turns into requirements at boot.
DERIVED_IMAGES = {'vtpm': ['hw_tpm_version=2.0', 'hw_tpm_model=tpm-crb']}


class CloudContents:
    """The flavor, the images, the traits, the providers and the servers."""

    def provider(self, name):
        rps = self.admin('resource', 'provider', 'list', '--name', name,
                         *PLACEMENT)
        return rps[0]['uuid'] if rps else None

    def provider_traits(self, uuid):
        return {t['name'] for t in self.admin(
            'resource', 'provider', 'trait', 'list', uuid, *PLACEMENT)}

    def make_flavor(self, ram_mb):
        """The flavor ``m1.nit``: one vCPU, RAM_MB and a 1 GB disk."""
        self.flavor = self.admin(
            'flavor', 'create', '--vcpus', '1', '--ram', str(ram_mb),
            '--disk', '1', '--public', 'm1.nit')['id']

    def make_images(self, names):
        """The images ``nit-<name>`` and the custom traits they require.

        Each requires its trait of ``IMAGE_TRAITS`` and has the
        properties of ``DERIVED_IMAGES``; the traits no provider reports
        are created in placement.
        """
        dep = self.dep
        path = os.path.join(dep.work, 'image.raw')
        with open(path, 'wb') as f:
            f.write(b'\0' * 4096)
        self.images = {}
        for name in names:
            props = []
            if name in IMAGE_TRAITS:
                props = ['--property', 'trait:%s=required' %
                         IMAGE_TRAITS[name]]
            for prop in DERIVED_IMAGES.get(name, ()):
                props += ['--property', prop]
            self.images[name] = self.admin(
                'image', 'create', '--file', path, '--disk-format', 'raw',
                '--container-format', 'bare', '--public', *props,
                'nit-' + name)['id']
        for trait in (TRAITS['nested'], TRAITS['absent']):
            dep.osc('admin', 'trait', 'create', trait, *PLACEMENT)

    def add_child(self, host, root):
        """A child ``<host>-nit-child`` of ROOT with the nested trait.

        Made through the placement API, as a driver's nested provider.
        """
        child = self.admin('resource', 'provider', 'create',
                           '--parent-provider', root, host + '-nit-child',
                           *PLACEMENT)['uuid']
        self.dep.osc('admin', 'resource', 'provider', 'trait', 'set',
                     '--trait', TRAITS['nested'], child, *PLACEMENT)
        return child

    def prepare(self):
        dep = self.dep
        self.make_flavor(128)
        self.make_images(('plain', 'plain2', 'gold', 'gold2', 'nested',
                          'absent', 'vtpm'))
        self.roots = {h: dep.wait_for('resource provider %s' % h,
                                      lambda h=h: self.provider(h), 120, 2)
                      for h in ('compute1', 'compute2')}
        # nova's provider.yaml put the gold trait on compute1's root.
        dep.wait_for('%s on compute1' % TRAITS['gold'],
                     lambda: TRAITS['gold'] in self.provider_traits(
                         self.roots['compute1']), 120, 2)
        self.child = self.add_child('compute2', self.roots['compute2'])
        self.servers = {'a': self.boot('nit-a', 'compute1'),
                        'b': self.boot('nit-b', 'compute2'),
                        # Only compute1 has the gold trait.
                        'g': self.boot('nit-g', 'compute1', image='gold',
                                       steer=False)}
        dep.wait_cinder()
        # Volume-backed: nova asks cinder for a volume made from the plain
        # image, and boots from it.
        self.servers['v'] = self.boot('nit-v', 'compute1',
                                      '--boot-from-volume', '1')
        shown = self.booted[self.servers['v']]
        if self.image_id(shown) != '':
            raise Failure('nit-v is not volume-backed: image %r' %
                          shown.get('image'))
        # What cinder recorded of its root volume, in cinder's database.
        rows = dep.query(
            "SELECT v.status, m.value FROM nova_cell1.block_device_mapping b "
            "JOIN cinder.volumes v ON v.id = b.volume_id "
            "LEFT JOIN cinder.volume_glance_metadata m "
            "ON m.volume_id = v.id AND m.`key` = 'image_id' "
            "AND m.deleted = 0 "
            "WHERE b.instance_uuid = %s AND b.boot_index = 0 "
            "AND b.deleted = 0", (self.servers['v'],))
        if rows != (('in-use', self.images['plain']),):
            raise Failure('the root volume of nit-v, as (status, '
                          'image): %r' % (rows,))
        #: The image a volume-backed server's root volume holds.
        self.volume_image = self.images['plain']

    def boot(self, name, host, *args, image='plain', steer=True):
        """As demo, from IMAGE, with the other compute disabled (STEER)."""
        other = 'compute2' if host == 'compute1' else 'compute1'
        if steer:
            self.dep.osc('admin', 'compute', 'service', 'set', '--disable',
                         other, 'nova-compute')
        try:
            server = self.user('server', 'create', '--flavor', 'm1.nit',
                               '--image', self.images[image], '--nic',
                               'none', *args, '--wait', name)
        finally:
            if steer:
                self.dep.osc('admin', 'compute', 'service', 'set',
                             '--enable', other, 'nova-compute')
        shown = self.admin('server', 'show', server['id'])
        if shown['status'] != 'ACTIVE' or shown.get(
                'OS-EXT-SRV-ATTR:host') != host:
            raise Failure('%s: %s on %s, wanted ACTIVE on %s' % (
                name, shown['status'], shown.get('OS-EXT-SRV-ATTR:host'),
                host))
        self.booted[server['id']] = shown
        return server['id']
