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
"""What judging derived requirements costs.

Two measurements. Nova's own code deriving what a boot of an image asks
(:func:`nova_image_traits.boot_requirements.derive`, which the filter, the
hook and the pre-check run once per rebuild), in CPU milliseconds, for an
image without properties, one with a ``trait:`` property and one whose
vTPM and disk bus nova turns into requirements (the prefilter on): as an
accepted rebuild derives it, and as a refusal does, which also finds the
property each requirement comes from. And the default strategy's
decisions with those requirements on the benchmark's hosts: their
placement requests.
"""

import itertools
import time

import nova.conf
from nova import context as nova_context
from nova import objects

from benchmarks import scenario
from benchmarks import stats
from nova_image_traits import boot_requirements
from nova_image_traits import requirements as reqs

#: name: image properties.
IMAGES = {
    'no properties': {},
    'one trait: property': {'trait:HW_CPU_X86_AVX2': 'required'},
    'vTPM and disk bus': {'hw_tpm_version': '2.0', 'hw_tpm_model': 'tpm-crb',
                          'hw_disk_bus': 'scsi', 'hw_vif_model': 'virtio',
                          'os_distro': 'ubuntu', 'hw_qemu_guest_agent': 'yes'},
}
STRATEGY = 'held_providers'


def _spec(properties):
    flavor = objects.Flavor(name='bench', flavorid='bench', vcpus=1,
                            memory_mb=512, root_gb=1, ephemeral_gb=0, swap=0,
                            extra_specs={})
    image = objects.ImageMeta.from_dict({
        'id': 'c0ffee00-0000-4000-8000-000000000001', 'disk_format': 'qcow2',
        'container_format': 'bare', 'properties': dict(properties)})
    return objects.RequestSpec(
        flavor=flavor, image=image, is_bfv=False, num_instances=1,
        instance_uuid='c0ffee00-0000-4000-8000-000000000002'), image


def measure_derivation(runs):
    """CPU ms of one derivation, per image; returns a list of dicts."""
    objects.register_all()
    nova.conf.CONF.set_override('image_metadata_prefilter', True,
                                'scheduler')
    context = nova_context.get_admin_context()
    out = []
    try:
        for (name, properties), refused in itertools.product(
                IMAGES.items(), (False, True)):
            spec, image = _spec(properties)
            boot = boot_requirements.derive(context, spec, image, False)
            samples = []
            for _i in range(runs):
                cpu = time.process_time()
                again = boot_requirements.derive(context, spec, image, False)
                if refused:
                    # A refusal's reason names each requirement's source.
                    again.derived.attributed()
                samples.append(time.process_time() - cpu)
            cell = {'image': name + (', refused' if refused else ''),
                    'runs': runs,
                    'requirements': [r.logged() for r in
                                     boot.derived.traits]}
            cell.update(stats.summarize(samples))
            out.append(cell)
    finally:
        nova.conf.CONF.clear_override('image_metadata_prefilter',
                                      'scheduler')
    return out


def measure_decisions(cloud, engine, runs):
    """The default's decisions with derived requirements on each host.

    Every case's trait becomes a requirement of each scope (a request
    filter's on the root, a ResourceRequest's in the unsuffixed group), as
    a vTPM and disk bus image asks.
    """
    out = []
    for n in sorted({n for n, _full in cloud.hosts}):
        for case in scenario.cases_for(n):
            derived = reqs.Derived(traits=(
                reqs.Requirement(case.trait, reqs.ROOT,
                                 sources=('hw_disk_bus=scsi',),
                                 via='transform_image_metadata'),
                reqs.Requirement('COMPUTE_SECURITY_TPM_2_0',
                                 sources=('hw_tpm_version=2.0',),
                                 via=reqs.RESOURCE_REQUEST)))
            host = cloud.host(n, case)
            samples = [engine.decide(STRATEGY, host, case, derived=derived)
                       for _i in range(runs)]
            cell = {'n': n, 'case': case.name, 'strategy': STRATEGY,
                    'outcome': samples[-1].outcome,
                    'requests_max': max(s.requests for s in samples),
                    'recorded_max': max(s.recorded for s in samples)}
            cell.update(stats.summarize([s.seconds for s in samples]))
            out.append(cell)
    return out


def measure(cloud, engine, runs):
    """Both measurements, as a dict for the report."""
    return {'derivation': measure_derivation(max(runs, 25)),
            'decisions': measure_decisions(cloud, engine, runs)}


def rows(results):
    """The report's table: derivations, then decisions."""
    derived = results.get('derived')
    if not derived:
        return (['derived requirements'], [['not measured']])
    nova = {c['n']: c for c in results.get('nova') or ()}
    out = []
    for cell in derived['derivation']:
        out.append(['derive: %s' % cell['image'], '-', '0',
                    '%.2f' % cell['median_ms'],
                    ', '.join(cell['requirements']) or '-'])
    for cell in derived['decisions']:
        cold = nova.get(cell['n'], {}).get('median_ms')
        out.append(['N=%(n)s %(case)s %(strategy)s' % cell,
                    cell['outcome'], str(cell['requests_max']),
                    '%.2f' % cell['median_ms'],
                    'nova cold check %s ms' % (
                        '%.1f' % cold if cold else '-')])
    return (['what', 'outcome', 'requests', 'median ms (CPU for derive)',
             'detail'], out)


def target(results, targets):
    """The default stays within its requests with derived requirements.

    :param targets: the :mod:`benchmarks.targets` module
    """
    derived = results.get('derived')
    if not derived:
        return targets._target(
            '%s with derived requirements: <= %d requests' % (
                STRATEGY, targets.MAX_REQUESTS), None, [], 'not measured')
    failures = ['N=%(n)s %(case)s: %(requests_max)d requests' % c
                for c in derived['decisions']
                if c['requests_max'] > targets.MAX_REQUESTS or
                c['requests_max'] != c['recorded_max']]
    return targets._target(
        '%s with derived requirements: <= %d requests' % (
            STRATEGY, targets.MAX_REQUESTS), len(derived['decisions']),
        failures, 'a root and an unsuffixed requirement, every N and case; '
                  'engine and server counts agree')
