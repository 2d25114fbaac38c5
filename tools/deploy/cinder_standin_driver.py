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
"""A STAND-IN for a storage backend of cinder-volume: volumes as files.

The deployment runs real cinder (cinder-api, cinder-scheduler,
cinder-volume), but there is no LVM volume group, iSCSI target or Ceph
cluster on this machine. cinder ships a driver that pretends to have one,
``cinder.tests.fake_driver.FakeLoggingVolumeDriver`` (an LVM driver whose
commands are logged, not run, over a fake 5 GB volume group), and its
connection info is all nova's ``fake.FakeDriver`` needs to "attach": that
driver attaches nothing.

That driver would still write an image it copies into a volume (a volume
created from a Glance image, a reimage) to the LVM device path,
``/dev/mapper/cinder--volumes-volume--<id>``. This subclass keeps each
volume as a sparse file under ``<state_path>/volumes`` instead, so that
cinder's own image code (download from Glance, ``qemu-img info``, the
format checks, ``qemu-img convert``) really runs and writes there, and
nothing is written under ``/dev``.

cinder-volume loads it by ``[<backend>] volume_driver =
cinder_standin_driver.FileVolumeDriver``, with this directory on its
``PYTHONPATH`` (cinder-volume only).
"""

import os

from oslo_config import cfg
from oslo_log import log as logging

from cinder.tests import fake_driver

LOG = logging.getLogger(__name__)


class FileVolumeDriver(fake_driver.FakeLoggingVolumeDriver):
    """cinder's fake LVM driver, with each volume a sparse file."""

    def _directory(self):
        return os.path.join(cfg.CONF.state_path, 'volumes')

    def local_path(self, volume, vg=None):
        return os.path.join(self._directory(), volume['name'])

    def create_volume(self, volume):
        update = super().create_volume(volume)
        os.makedirs(self._directory(), exist_ok=True)
        with open(self.local_path(volume), 'wb') as f:
            f.truncate(int(volume['size']) * 1024 ** 3)
        LOG.info('Volume %(id)s is the sparse file %(path)s',
                 {'id': volume['id'], 'path': self.local_path(volume)})
        return update

    def delete_volume(self, volume):
        try:
            os.unlink(self.local_path(volume))
        except FileNotFoundError:
            pass
