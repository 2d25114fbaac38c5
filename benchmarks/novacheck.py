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
"""Nova's own rebuild check, called exactly as the conductor calls it.

:meth:`NovaCheck.run` calls the real
``nova.conductor.manager.ComputeTaskManager._validate_image_traits_for_rebuild``
with a stand-in ``self`` that holds a real ``SchedulerReportClient`` (built
from nova's ``[placement]`` options, pointed at the benchmark placement)
and an image API returning the new image. The only other stand-in is the
database lookup ``ComputeNode.get_by_host_and_nodename``, which returns the
compute node's UUID. The report client's provider cache is cleared before
every run: a conductor that has not looked at this host in the last
``[compute] resource_provider_association_refresh`` seconds is cold.
"""

import time
from unittest import mock

from nova.conductor import manager
import nova.conf
from nova import context as nova_context
from nova import exception as nova_exc
from nova import objects
from nova.scheduler.client import report

from benchmarks import scenario

IMAGE_REF = '6b1e2c34-9a0f-4c55-8d0e-1f2a3b4c5d6e'
PASS = 'pass'
FAIL = 'fail (NoValidHost)'


class _ImageAPI:
    """Return the new image, as ``nova.image.glance.API.get`` would."""

    def __init__(self):
        self.properties = {}

    def get(self, context, image_ref):
        return {'id': image_ref, 'properties': dict(self.properties)}


class _Conductor:
    """What the check reads from ``self``: a report client and images."""

    def __init__(self, report_client):
        self.report_client = report_client
        self.image_api = _ImageAPI()


def configure(cloud):
    """Parse nova's configuration with ``[placement]`` at ``cloud``.

    :returns: nova's global ``CONF``
    """
    path = cloud.placement_conf_file('nova.conf')
    conf = nova.conf.CONF
    conf(['--config-file', path], project='nova', default_config_files=[],
         default_config_dirs=[])
    objects.register_all()
    return conf


class NovaCheck:
    """Nova's conductor check against the benchmark placement.

    :param cloud: the :class:`~benchmarks.scenario.Cloud`
    """

    def __init__(self, cloud):
        self.cloud = cloud
        configure(cloud)
        self.context = nova_context.get_admin_context()
        self.client = report.SchedulerReportClient()
        self.conductor = _Conductor(self.client)

    def _instance(self, host):
        return objects.Instance(
            uuid=host.instance_uuid, host=host.name, node=host.name,
            flavor=objects.Flavor(extra_specs=dict(host.flavor.extra_specs)))

    def run(self, host, case):
        """Run the check once on a cold cache.

        :returns: ``(seconds, requests recorded, outcome)``
        """
        self.conductor.image_api.properties = scenario.image_properties(
            case)
        instance = self._instance(host)
        node = objects.ComputeNode(uuid=host.root)
        self.client.clear_provider_cache()
        self.cloud.recorded()
        with mock.patch.object(objects.ComputeNode,
                               'get_by_host_and_nodename',
                               return_value=node):
            start = time.perf_counter()
            try:
                manager.ComputeTaskManager._validate_image_traits_for_rebuild(
                    self.conductor, self.context, instance, IMAGE_REF)
                outcome = PASS
            except nova_exc.NoValidHost:
                outcome = FAIL
            seconds = time.perf_counter() - start
        return seconds, len(self.cloud.recorded()), outcome
