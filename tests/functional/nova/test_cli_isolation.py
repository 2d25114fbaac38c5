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
"""The command line's isolation rule against nova's ``isolate_aggregates``.

Inside nova, :func:`boot_requirements.forbidden_aggregates` calls nova's
own request filter, which reads the API database. The commands have none
and apply :func:`nova_image_traits.cli.isolation.forbidden` to the
aggregates the compute API lists. On each case below, the two must give
the same aggregates, as ``test_resource_request.py`` holds the command
line's boot query to nova's ``ResourceRequest``.
"""

from nova import context as nova_context
from nova import objects
from nova import test

from nova_image_traits import boot_requirements
from nova_image_traits import cli
from nova_image_traits.cli import derive
from nova_image_traits.cli import isolation as cli_isolation
from nova_image_traits import flavor as nit_flavor
from nova_image_traits import request as nit_request

objects.register_all()

GOLD, SILVER = 'CUSTOM_GOLD', 'CUSTOM_SILVER'
TPM = 'COMPUTE_SECURITY_TPM_2_0'

#: name: aggregate metadata
AGGREGATES = {
    'gold': {'trait:' + GOLD: 'required'},
    'silver': {'trait:' + SILVER: 'required'},
    'both': {'trait:' + GOLD: 'required', 'trait:' + SILVER: 'required'},
    'tpm': {'trait:' + TPM: 'required'},
    'plain': {},
    'other-metadata': {'availability_zone': 'az1', 'ssd': 'true'},
    'other-value': {'trait:' + GOLD: 'preferred'},
    'value-case': {'trait:' + GOLD: 'Required'},
    'prefix-case': {'TRAIT:' + SILVER: 'required'},
    'forbidden-value': {'trait:' + SILVER: 'forbidden'},
}

#: name: (flavor extra specs, image properties)
CASES = {
    'plain': ({}, {}),
    'image-gold': ({}, {'trait:' + GOLD: 'required'}),
    'image-both': ({}, {'trait:' + GOLD: 'required',
                        'trait:' + SILVER: 'required'}),
    'image-gold-ignored-value': ({}, {'trait:' + GOLD: 'preferred'}),
    'flavor-gold': ({'trait:' + GOLD: 'required'}, {}),
    'flavor-gold-image-silver': ({'trait:' + GOLD: 'required'},
                                 {'trait:' + SILVER: 'required'}),
    'flavor-gold-forbidden': ({'trait:' + GOLD: 'forbidden'}, {}),
    'numbered-group-silver': ({'resources1:VCPU': '1',
                               'trait1:' + SILVER: 'required'}, {}),
    'image-tpm': ({}, {'hw_tpm_version': '2.0', 'hw_tpm_model': 'tpm-crb'}),
}


class RuleAgainstNovaTest(test.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(enable_isolated_aggregate_filtering=True,
                   group='scheduler')
        self.context = nova_context.get_admin_context()
        self.uuids = {}
        for name, metadata in AGGREGATES.items():
            aggregate = objects.Aggregate(self.context, name=name,
                                          metadata=metadata)
            aggregate.create()
            self.uuids[aggregate.uuid] = name
        conf = cli.load_conf()
        self.assertTrue(cli_isolation.enabled(conf) is False)
        self.deriver = derive.Deriver(conf)
        self.assertTrue(self.deriver.available)

    def nova(self, extra_specs, properties):
        spec = objects.RequestSpec(
            flavor=objects.Flavor(vcpus=1, memory_mb=512, root_gb=1,
                                  ephemeral_gb=0, swap=0,
                                  extra_specs=dict(extra_specs)),
            is_bfv=False, instance_uuid='cdb3e8c6-5c4c-4a7c-9b7a-'
                                        '0123456789ab')
        image = objects.ImageMeta.from_dict(derive.split(properties))
        return boot_requirements.forbidden_aggregates(self.context, spec,
                                                      image)

    def command_line(self, extra_specs, properties):
        request = self.deriver.request(nit_request.RebuildRequest(
            instance_uuid='cdb3e8c6-5c4c-4a7c-9b7a-0123456789ab',
            compute_node_uuid=None, image_properties=properties,
            flavor=nit_flavor.Flavor(vcpus=1, memory_mb=512, root_gb=1,
                                     extra_specs=dict(extra_specs))))
        pairs = [(a.uuid, a.metadata)
                 for a in objects.AggregateList.get_all(self.context)]
        return cli_isolation.forbidden(
            pairs, cli_isolation.required_traits(request))

    def test_cases_forbid_something_and_not_everything(self):
        every = set(self.uuids)
        for extra_specs, properties in CASES.values():
            found = self.nova(extra_specs, properties)
            self.assertTrue(found)
            self.assertLess(set(found), every)

    def test_what_resource_request_derives_counts(self):
        # nova's all_required_traits holds the vTPM trait its
        # ResourceRequest derives, so the aggregate isolated for it is not
        # forbidden: the command line must derive it too.
        names = {self.uuids[u] for u in self.nova(*CASES['image-tpm'])}
        self.assertNotIn('tpm', names)
        self.assertIn('tpm', {self.uuids[u] for u in self.nova({}, {})})

    def test_isolation_off_forbids_nothing(self):
        self.flags(enable_isolated_aggregate_filtering=False,
                   group='scheduler')
        self.assertEqual(frozenset(), self.nova({}, {}))


def _make(name, case):
    def test(self):
        nova = sorted(self.uuids[u] for u in self.nova(*case))
        self.assertEqual(nova, sorted(self.uuids[u]
                                      for u in self.command_line(*case)))
    test.__name__ = 'test_%s' % name.replace('-', '_')
    return test


for _name, _case in CASES.items():
    _test = _make(_name, _case)
    setattr(RuleAgainstNovaTest, _test.__name__, _test)
