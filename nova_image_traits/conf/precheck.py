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
"""Options of the nova-api pre-check, in the ``[image_traits]`` group.

Read by nova-api only; registered and listed with the other
``[image_traits]`` options (:mod:`.image_traits`).
"""

from oslo_config import cfg

OPTS = [
    cfg.BoolOpt(
        'judge_same_image_rebuild',
        default=True,
        help="""
Judge a rebuild with the server's own image when the image's properties
changed since the server recorded them, as if it were a new image. Read by
the nova-api pre-check (the ``image_traits_precheck`` paste filter) only.

nova schedules and checks nothing when a rebuild keeps the image id, yet its
API records the image's current properties in the server's system metadata
and the compute applies them. An image that gained
``trait:CUSTOM_X=required`` or ``hw_tpm_version=2.0`` since the server booted
would then run on a host without ``CUSTOM_X`` or a TPM. With this option the
pre-check compares the image's properties as nova reads them (its
``ImageMetaProps``) with those the server's ``image_*`` system metadata held
before the rebuild: when they differ, it judges the image as a new one, with
the recorded properties as the current image, and answers a refusal with a
400. An unchanged image (a plain "reset my server") is not judged; it
costs no placement request for an image-backed server (for a volume-backed
one, the requests the pre-check sends before nova reads the volume).
Neither the scheduler filter nor the conductor hook sees a same-image
rebuild: a pre-check that fails lets it through unjudged.

Set it to False to let nova rebuild every server with its own image
unjudged, as before this option existed.
"""),
    cfg.StrOpt(
        'precheck_on_unsupported_nova',
        default='run_without_precheck',
        choices=[
            ('run_without_precheck',
             'Start nova-api without the pre-check, and log a CRITICAL '
             'message once saying so: the conductor hook decides every '
             'rebuild, and refuses by putting the server in ERROR.'),
            ('refuse_to_start',
             'Fail the loading of the api-paste.ini pipeline, so that '
             'nova-api does not start.'),
        ],
        help="""
What nova-api does when the ``image_traits_precheck`` paste filter is in
its pipeline and the running nova lacks an internal the pre-check relies on
(``nova.compute.api.API.rebuild`` changed: a nova release this version of
nova-image-traits does not know). Either way, nothing of nova is changed
when the pre-check cannot be installed. ``nova-image-traits-status upgrade
check`` reports it.
"""),
    cfg.BoolOpt(
        'precheck_scheduler_filters',
        default=False,
        help="""
Have the nova-api pre-check also run nova's rebuild scheduler filters (those
with ``RUN_ON_REBUILD``, such as ``ImagePropertiesFilter``,
``AggregateImagePropertiesIsolation`` and ``IsolatedHostsFilter``) on the
server's own host, so that a rebuild they would refuse gets a 400 and leaves
the server untouched, instead of ending in ERROR. ``ImageTraitsFilter`` is
not run there: the pre-check decides it already.

The filters read ``[filter_scheduler]`` (``enabled_filters``,
``available_filters`` and the options each filter reads, such as
``isolated_images``, ``isolated_hosts`` or
``aggregate_image_properties_isolation_namespace``). Deployers set that group
on the scheduler hosts; with nova's defaults, an API host would run
``ImagePropertiesFilter`` whether or not the scheduler does, and refuse what
nova accepts. Before turning this on, copy the scheduler's
``[filter_scheduler]`` to every nova-api host. A filter that cannot be
loaded or raises never refuses: the rebuild goes on to nova, and a WARNING
says why. Costs one API database query per decided rebuild, and the read of
the compute node, which the pre-check otherwise remembers.
"""),
]
