package deploy

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Agones Fleet, transcribed from agones.dev/agones/pkg/apis/agones/v1
// (Fleet, GameServerTemplateSpec, GameServerSpec and what they hold, as of
// Agones 1.4x): the module proxy here does not serve agones.dev/agones, so
// the test cannot decode into Agones' own types. Every field of those
// types is named, so that strict decoding refuses a misspelled one;
// fields the manifests do not use are kept raw. The pod template is the
// real corev1.PodTemplateSpec, as in Agones.

type fleet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              fleetSpec       `json:"spec"`
	Status            json.RawMessage `json:"status,omitempty"`
}

type fleetSpec struct {
	Replicas           int32                     `json:"replicas"`
	AllocationOverflow json.RawMessage           `json:"allocationOverflow,omitempty"`
	Strategy           appsv1.DeploymentStrategy `json:"strategy"`
	Scheduling         string                    `json:"scheduling,omitempty"`
	Priorities         json.RawMessage           `json:"priorities,omitempty"`
	Template           gameServerTemplateSpec    `json:"template"`
}

type gameServerTemplateSpec struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              gameServerSpec `json:"spec"`
}

type gameServerSpec struct {
	Container  string                   `json:"container,omitempty"`
	Ports      []gameServerPort         `json:"ports,omitempty"`
	Health     health                   `json:"health,omitempty"`
	Scheduling string                   `json:"scheduling,omitempty"`
	SdkServer  json.RawMessage          `json:"sdkServer,omitempty"`
	Template   corev1.PodTemplateSpec   `json:"template"`
	Players    json.RawMessage          `json:"players,omitempty"`
	Counters   map[string]counterStatus `json:"counters,omitempty"`
	Lists      map[string]listStatus    `json:"lists,omitempty"`
	Eviction   json.RawMessage          `json:"eviction,omitempty"`
}

type gameServerPort struct {
	Name          string          `json:"name,omitempty"`
	Range         string          `json:"range,omitempty"`
	PortPolicy    string          `json:"portPolicy,omitempty"`
	Container     *string         `json:"container,omitempty"`
	ContainerPort int32           `json:"containerPort,omitempty"`
	HostPort      int32           `json:"hostPort,omitempty"`
	Protocol      corev1.Protocol `json:"protocol,omitempty"`
}

type health struct {
	Disabled            bool  `json:"disabled,omitempty"`
	PeriodSeconds       int32 `json:"periodSeconds,omitempty"`
	FailureThreshold    int32 `json:"failureThreshold,omitempty"`
	InitialDelaySeconds int32 `json:"initialDelaySeconds,omitempty"`
}

type counterStatus struct {
	Count    int64 `json:"count"`
	Capacity int64 `json:"capacity"`
}

type listStatus struct {
	Capacity int64    `json:"capacity"`
	Values   []string `json:"values"`
}
